"""gunicorn settings for `make serve`, all from the environment (no Django import here).

WEB_CONCURRENCY   worker processes (default 2 x CPUs + 1)
BIND              address:port to listen on (default 0.0.0.0:$PORT, PORT default 8000)
GUNICORN_TIMEOUT  seconds a worker may spend on one request (default 120: big batches)
FORWARDED_ALLOW_IPS  proxies whose X-Forwarded-* headers gunicorn trusts (default 127.0.0.1)
"""

from __future__ import annotations

import multiprocessing
import os

bind = os.environ.get("BIND") or f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count() * 2 + 1)
# Sync workers: one request per process, so a slow batch never starves another in the same
# worker. Put a buffering proxy (nginx, a cloud load balancer) in front so slow clients
# cannot tie workers up while trickling a body in.
worker_class = "sync"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = 5
# Recycle workers now and then so a slow leak in any library cannot grow without bound.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "5000"))
max_requests_jitter = max_requests // 10
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# Import the app once in the master: workers fork with it loaded (faster start, shared pages).
preload_app = True
# gunicorn >= 25 opens a runtime control socket (worker count, reload) under $HOME by default;
# off unless asked for, so it is never an unplanned management interface and two instances on
# one host do not fight over the same path.
control_socket_disable = not os.environ.get("GUNICORN_CONTROL_SOCKET")
if not control_socket_disable:
    control_socket = os.environ["GUNICORN_CONTROL_SOCKET"]
