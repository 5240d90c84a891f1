"""HyperOffload for PyTorch: offload the tensors autograd saves for the
backward into the node daemon's DDR pool, following a plan the daemon
computes from a trace of the first step.

Three lines::

    from hyperoffload import OffloadSession
    session = OffloadSession(model, optimizer)   # socket: $HO_SOCKET, ...
    with session:                                # each step's fwd + bwd
        loss_fn(model(x), y).backward()

Modules:

* :mod:`hyperoffload.binding` -- ctypes binding to libhyperoffload
  (no torch): :class:`Client`, :class:`Trace`, :class:`Plan`,
  :class:`HoError`, :func:`locate_library`;
* :mod:`hyperoffload.trace` -- capture a training step as a trace
  (``capture_step``, ``save``);
* :mod:`hyperoffload.session` -- :class:`OffloadSession`,
  :class:`OffloadError`, :class:`OffloadWarning`, :class:`LiveBytesMode`.

The binding's names are importable from here without torch; the torch
parts load on first use.
"""

from .binding import (HO_E_DIVERGED, HO_E_INFEASIBLE,  # noqa: F401
                      HO_E_UNSUPPORTED, LIBRARY_ENV, SONAME, Client, Extent,
                      HoError, Plan, Trace, err_name, has, lib,
                      library_path, locate_library, runtime_last_error,
                      strerror, version)

__version__ = "0.1.0"

_SESSION_NAMES = ("OffloadSession", "OffloadError", "OffloadWarning",
                  "LiveBytesMode", "LiveTracker")


def __getattr__(name):
    # PEP 562: import torch only when the torch parts are used.
    if name in _SESSION_NAMES:
        from . import session
        return getattr(session, name)
    if name in ("session", "trace"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def __dir__():
    return sorted(list(globals()) + list(_SESSION_NAMES) +
                  ["session", "trace"])
