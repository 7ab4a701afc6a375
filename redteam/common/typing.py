"""Type aliases the apps share (for annotations only: nothing here is imported at run time)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser
    from django.contrib.auth.models import User as AccountUser

# Who is acting: `request.user` (Django's or DRF's, signed in or anonymous) or an account a
# command names. Code that needs an account narrows it with `user.is_authenticated`.
User: TypeAlias = "AccountUser | AnonymousUser"
