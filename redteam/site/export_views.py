"""The "Export as PyRIT memory" button of the conversation and attack-results lists.

The page's own query string selects the slice (redteam.site.memory_slice, the page's
FilterSet within the viewer's scope), written as a PyRIT SQLite memory file
(redteam.site.memory_export) with its media, zipped and streamed: ``pyrit_memory.db``, the
media under ``media/`` (the pieces' paths rewritten to ``media/<sha256>.<ext>``, relative: open
the memory from the unzipped folder) and a short README. ``?shape=0.13`` writes PyRIT 0.13's
schema instead of 1.x's.

Bounded work: at most MAX_DOWNLOAD_CONVERSATIONS conversations and MAX_DOWNLOAD_MEDIA_BYTES of
media per download (a larger slice answers 413 and names the command that has no cap); the
file and the archive are built in temporary files, never in memory, and removed once sent.
The archive is reproducible: the same rows give the same bytes. Each download is audited
(who, which list, its filters, what the file holds).
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from typing import IO

from django.http import FileResponse, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_GET

from redteam.common.access import scope_for
from redteam.common.audit import record_audit
from redteam.common.roles import viewer_required
from redteam.site.memory_export import ExportTooLarge, MediaFolder, write_memory_file
from redteam.site.memory_slice import SliceError, select_slice

__all__ = [
    "MAX_DOWNLOAD_CONVERSATIONS",
    "MAX_DOWNLOAD_MEDIA_BYTES",
    "attack_results_memory",
    "conversations_memory",
]

MAX_DOWNLOAD_CONVERSATIONS = 2000
MAX_DOWNLOAD_MEDIA_BYTES = 256 * 1024 * 1024
EXPORT_ACTION = "memory.exported"
EXPORT_OBJECT_TYPE = "memory_slice"
DATABASE_NAME = "pyrit_memory.db"
MEDIA_FOLDER = "media"
# Zip entries carry this time, so an archive depends on its rows only.
ENTRY_TIME = (1980, 1, 1, 0, 0, 0)
README = """\
A slice of the redteam server's memory, as a PyRIT {shape} SQLite memory file.

Open it from this folder (media paths are relative to it):

    from pyrit.memory import SQLiteMemory
    memory = SQLiteMemory(db_path="{database}")
    memory.get_message_pieces(); memory.get_prompt_scores(); memory.get_attack_results()

{summary}
"""


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ENTRY_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def _archive(folder: Path, shape: str, summary: str) -> IO[bytes]:
    """The zip of the memory file, its media and the README, in an anonymous temporary file."""
    archive = tempfile.TemporaryFile()  # noqa: SIM115 - FileResponse closes (and so deletes) it
    with zipfile.ZipFile(archive, "w") as zf:
        readme = README.format(shape=shape, database=DATABASE_NAME, summary=summary)
        zf.writestr(_entry("README.txt"), readme)
        with (folder / DATABASE_NAME).open("rb") as db, zf.open(_entry(DATABASE_NAME), "w") as out:
            while chunk := db.read(1 << 20):
                out.write(chunk)
        media = folder / MEDIA_FOLDER
        for path in sorted(media.iterdir()) if media.is_dir() else ():
            with (
                path.open("rb") as source,
                zf.open(_entry(f"{MEDIA_FOLDER}/{path.name}"), "w") as out,
            ):
                while chunk := source.read(1 << 20):
                    out.write(chunk)
    archive.seek(0)
    return archive


def _download(request: HttpRequest, page: str) -> HttpResponseBase:
    shape = request.GET.get("shape") or "1.x"
    if shape not in ("1.x", "0.13"):
        return _text("shape: use 1.x or 0.13.", 400)
    try:
        selection = select_slice(page, request.GET, scope=scope_for(request))
    except SliceError as exc:
        return _text(f"Invalid filter: {exc}", 400)
    with tempfile.TemporaryDirectory(prefix="pyrit-memory-") as name:
        folder = Path(name)
        media = MediaFolder(folder / MEDIA_FOLDER, MEDIA_FOLDER, max_bytes=MAX_DOWNLOAD_MEDIA_BYTES)
        try:
            report = write_memory_file(
                folder / DATABASE_NAME,
                selection,
                shape="0.13" if shape == "0.13" else "1.x",
                media=media,
                max_conversations=MAX_DOWNLOAD_CONVERSATIONS,
            )
        except ExportTooLarge as exc:
            return _text(f"Too large to download: {exc}.", 413)
        report.path = DATABASE_NAME
        archive = _archive(folder, shape, report.summary())
    # Data leaving the server: who took which slice (one INSERT).
    record_audit(
        actor=request.user,
        action=EXPORT_ACTION,
        object_type=EXPORT_OBJECT_TYPE,
        object_id=page,
        detail={
            "filters": {k: request.GET.getlist(k) for k in sorted(request.GET)},
            "shape": shape,
            "conversations": len(selection.conversation_ids),
            "rows": report.tables,
            "media_files": report.media_files,
        },
    )
    return FileResponse(
        archive,
        as_attachment=True,
        filename=f"pyrit-memory-{shape}.zip",
        content_type="application/zip",
    )


@require_GET
@viewer_required
def conversations_memory(request: HttpRequest) -> HttpResponseBase:
    """The conversation list's slice (its filters from the query string) as PyRIT memory."""
    return _download(request, "conversations")


@require_GET
@viewer_required
def attack_results_memory(request: HttpRequest) -> HttpResponseBase:
    """The attack-results list's slice (its filters and review view) as PyRIT memory."""
    return _download(request, "attack-results")
