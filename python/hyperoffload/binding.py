"""ctypes binding to libhyperoffload (client/include/hyperoffload/*.h).

Only what a Python framework hook needs: connect and register a session,
allocate extents in the session's DDR pool (mapped into this process),
load a trace file, ask the daemon for a plan and read its schedule back.
Python standard library only; no torch here.

Finding the library (:func:`locate_library`), first match wins:

1. ``$HO_LIBRARY``: the path of ``libhyperoffload.so.0`` (or ``.so``)
   itself -- an explicit choice, e.g. a build tree's
   ``build/lib/libhyperoffload.so.0``, beats anything installed;
2. the installed library: ``/usr/lib/<multiarch>/libhyperoffload.so.0``
   (the libhyperoffload0 package), then ``/usr/local/lib/<multiarch>/`` and
   ``/usr/local/lib/`` (``cmake --install`` with the default prefix);
3. ``pkg-config --variable=libdir hyperoffload`` (an install elsewhere,
   found through ``PKG_CONFIG_PATH``).

Nothing else is guessed; :class:`OSError` names what was tried.

Errors: every failing call raises :class:`HoError` carrying the library's
negative code (``code``), its symbolic name (``name``, e.g.
``"HO_E_INFEASIBLE"``) and the sentence of ``ho_last_error()`` when a
client was involved.  A symbol missing from an older library raises
:class:`HoError` with ``name == "HO_E_UNSUPPORTED"`` when first used, so
the rest of the binding stays usable.

Ownership: :class:`Client`, :class:`Trace` and :class:`Plan` own their C
objects and free them in ``close()`` (also used by ``with`` and by the
garbage collector, in that order of preference).  A :class:`Plan` keeps
its :class:`Trace` alive; extents live until :meth:`Client.extent_free`
or :meth:`Client.close`.

Usage::

    from hyperoffload import binding as ho
    with ho.Client.connect("/path/hod.sock", "my-job") as c:
        c.register(job="train", device=0, hbm_budget=8 << 30)
        ext = c.extent_alloc(1 << 20)          # ext.ptr: address in the pool
        with ho.Trace.load("step.json") as t:
            with c.plan_request(t) as plan:
                print(plan.info()["peak_device_bytes"])
                plan.save("schedule.json")
"""

import ctypes
import os
import subprocess
import sysconfig

# Error codes of hyperoffload/errors.h (negative; errno values are below
# 1000 in magnitude).
HO_E_INFEASIBLE = -1012
HO_E_DIVERGED = -1022
HO_E_UNSUPPORTED = -1025

LIBRARY_ENV = "HO_LIBRARY"
SONAME = "libhyperoffload.so.0"


class HoError(Exception):
    """A libhyperoffload call failed.

    Attributes: ``code`` (negative int), ``name`` (``ho_err_name``),
    ``detail`` (``ho_last_error`` sentence or our own), ``call`` (the C
    function)."""

    def __init__(self, call, code, detail=""):
        self.call = call
        self.code = code
        self.name = err_name(code) if _lib_or_none() else str(code)
        self.detail = detail
        super().__init__("%s: %s (%s)%s" % (
            call, strerror(code) if _lib_or_none() else "error", self.name,
            ": " + detail if detail else ""))


def _installed_candidates():
    multiarch = sysconfig.get_config_var("MULTIARCH")
    dirs = []
    for prefix in ("/usr", "/usr/local"):
        if multiarch:
            dirs.append(os.path.join(prefix, "lib", multiarch))
    dirs.append("/usr/local/lib")
    return [os.path.join(d, SONAME) for d in dirs]


def _pkg_config_candidate():
    try:
        p = subprocess.run(["pkg-config", "--variable=libdir",
                            "hyperoffload"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL,
                           universal_newlines=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = p.stdout.strip() if p.returncode == 0 else ""
    if not libdir:
        return None
    for name in (SONAME, "libhyperoffload.so"):
        c = os.path.join(libdir, name)
        if os.path.exists(c):
            return c
    return None


def locate_library():
    """(path, how) of the library the binding loads, ``how`` one of
    ``"HO_LIBRARY"``, ``"installed"``, ``"pkg-config"``; (None, tried)
    when there is none, ``tried`` saying where it looked."""
    p = os.environ.get(LIBRARY_ENV)
    if p:
        return p, LIBRARY_ENV
    installed = _installed_candidates()
    for c in installed:
        if os.path.exists(c):
            return c, "installed"
    c = _pkg_config_candidate()
    if c:
        return c, "pkg-config"
    return None, "$%s unset, none of %s, no pkg-config 'hyperoffload'" % (
        LIBRARY_ENV, ", ".join(installed))


def library_path():
    """The path the binding loads (see the module docstring), or None."""
    return locate_library()[0]


_LIB = None


def _lib_or_none():
    return _LIB


def lib():
    """The loaded ctypes.CDLL (loaded on first use)."""
    global _LIB
    if _LIB is None:
        path, how = locate_library()
        if not path:
            raise OSError("libhyperoffload not found (%s): install "
                          "libhyperoffload0 or set %s" % (how, LIBRARY_ENV))
        _LIB = ctypes.CDLL(path)
        _declare(_LIB)
    return _LIB


# ----------------------------------------------------------------- structs
class Extent(ctypes.Structure):
    """struct ho_extent: an extent of the session's DDR pool; ``ptr`` is
    its first byte in this process."""
    _fields_ = [("id", ctypes.c_uint64), ("arena_id", ctypes.c_uint64),
                ("offset", ctypes.c_uint64), ("length", ctypes.c_uint64),
                ("ptr", ctypes.c_void_p)]


class _PlanInfo(ctypes.Structure):
    _fields_ = [("planner", ctypes.c_char * 32),
                ("budget_bytes", ctypes.c_uint64),
                ("no_offload_peak", ctypes.c_uint64),
                ("min_budget", ctypes.c_uint64),
                ("peak_device_bytes", ctypes.c_uint64),
                ("peak_host_bytes", ctypes.c_uint64),
                ("compute_us", ctypes.c_double),
                ("step_time_us", ctypes.c_double),
                ("exposed_us", ctypes.c_double),
                ("h2d_bytes", ctypes.c_uint64),
                ("d2h_bytes", ctypes.c_uint64),
                ("planning_ms", ctypes.c_double),
                ("cached", ctypes.c_int),
                ("actions", ctypes.c_uint64)]


class _Usage(ctypes.Structure):
    _fields_ = [("ddr_bytes", ctypes.c_uint64),
                ("flash_bytes", ctypes.c_uint64),
                ("extents", ctypes.c_uint64),
                ("hbm_granted", ctypes.c_uint64)]


_P = ctypes.c_void_p
_U64 = ctypes.c_uint64
_INT = ctypes.c_int
_STR = ctypes.c_char_p

# name: (restype, argtypes)
_SIGNATURES = {
    "ho_version": (_STR, []),
    "ho_strerror": (_STR, [_INT]),
    "ho_err_name": (_STR, [_INT]),
    "ho_connect": (_INT, [_STR, _STR, ctypes.POINTER(_P)]),
    "ho_close": (_P, [_P]),
    "ho_last_error": (_STR, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "ho_register": (_INT, [_P, _STR, _INT, _U64]),
    "ho_session_id": (_U64, [_P]),
    "ho_hbm_granted": (_U64, [_P]),
    "ho_pool_base": (_P, [_P]),
    "ho_pool_size": (_U64, [_P]),
    "ho_pool_alignment": (_U64, [_P]),
    "ho_extent_alloc": (_INT, [_P, _U64, ctypes.POINTER(Extent)]),
    "ho_extent_free": (_INT, [_P, _U64]),
    "ho_stats": (_INT, [_P, _P, ctypes.c_size_t,
                        ctypes.POINTER(ctypes.c_size_t),
                        ctypes.POINTER(_Usage)]),
    "ho_trace_load": (_INT, [_STR, ctypes.POINTER(_P)]),
    "ho_trace_ops": (ctypes.c_uint32, [_P]),
    "ho_trace_free": (_P, [_P]),
    "ho_plan_request": (_INT, [_P, _P, _U64, _STR, ctypes.POINTER(_P)]),
    "ho_plan_get_info": (None, [_P, ctypes.POINTER(_PlanInfo)]),
    "ho_plan_save": (_INT, [_P, _STR]),
    "ho_plan_free": (_P, [_P]),
    "ho_runtime_last_error": (_STR, []),
}


def _declare(cdll):
    for name, (res, args) in _SIGNATURES.items():
        try:
            fn = getattr(cdll, name)
        except AttributeError:
            continue  # reported by _fn() when used
        fn.restype = res
        fn.argtypes = args


def _fn(name):
    try:
        return getattr(lib(), name)
    except AttributeError:
        raise HoError(name, HO_E_UNSUPPORTED,
                      "%s is not exported by %s" % (name, library_path()))


def has(name):
    """True when the loaded library exports C function ``name``."""
    try:
        getattr(lib(), name)
        return True
    except AttributeError:
        return False


def _b(s):
    return None if s is None else s.encode()


def runtime_last_error():
    """ho_runtime_last_error(): the sentence of the last failed runtime
    call (trace, plan) on this thread; "" when the library lacks it."""
    if not has("ho_runtime_last_error"):
        return ""
    msg = _fn("ho_runtime_last_error")()
    return (msg or b"").decode("utf-8", "replace")


def version():
    return _fn("ho_version")().decode()


def strerror(code):
    return _fn("ho_strerror")(code).decode()


def err_name(code):
    return _fn("ho_err_name")(code).decode()


# ----------------------------------------------------------------- handles
class _Owned:
    """An object of the library owned through a pointer: ``_free`` names
    the function that releases it, ``_what`` what it is (for errors).
    close() releases it once; usable as a context manager."""

    _free = None
    _what = "object"

    def __init__(self, handle):
        self._h = handle

    @property
    def handle(self):
        if not self._h:
            raise ValueError("%s is closed" % self._what)
        return self._h

    def close(self):
        if self._h:
            _fn(self._free)(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


# ----------------------------------------------------------------- client
class Client(_Owned):
    """A connection to hyperoffloadd (ho_client).  close() is ho_close:
    the daemon drops the session and its extents."""

    _free = "ho_close"
    _what = "client"

    @classmethod
    def connect(cls, socket=None, name="hyperoffload-python"):
        """ho_connect(socket, name); socket None resolves as the library
        does ($HO_SOCKET, ./.hyperoffload/..., /run/hyperoffload/...)."""
        h = _P()
        rc = _fn("ho_connect")(_b(socket), _b(name), ctypes.byref(h))
        if rc < 0:
            raise HoError("ho_connect", rc, socket or "")
        return cls(h)

    def _check(self, call, rc):
        if rc < 0:
            buf = ctypes.create_string_buffer(512)
            msg = _fn("ho_last_error")(self._h, buf, len(buf))
            raise HoError(call, rc, (msg or b"").decode("utf-8", "replace"))
        return rc

    def register(self, job=None, device=0, hbm_budget=0):
        """ho_register: job (None: own arena), device index (-1 none),
        HBM budget in bytes (0: no grant).  Maps the session's pool."""
        self._check("ho_register", _fn("ho_register")(
            self.handle, _b(job), device, hbm_budget))

    @property
    def session_id(self):
        return _fn("ho_session_id")(self.handle)

    @property
    def hbm_granted(self):
        return _fn("ho_hbm_granted")(self.handle)

    @property
    def pool_base(self):
        return _fn("ho_pool_base")(self.handle) or 0

    @property
    def pool_size(self):
        return _fn("ho_pool_size")(self.handle)

    @property
    def pool_alignment(self):
        return _fn("ho_pool_alignment")(self.handle)

    def extent_alloc(self, nbytes):
        """ho_extent_alloc: a new :class:`Extent` of at least nbytes."""
        ext = Extent()
        self._check("ho_extent_alloc", _fn("ho_extent_alloc")(
            self.handle, nbytes, ctypes.byref(ext)))
        return ext

    def extent_free(self, extent_id):
        self._check("ho_extent_free", _fn("ho_extent_free")(
            self.handle, extent_id))

    def usage(self):
        """The session's own usage (ho_stats): a dict with ddr_bytes,
        flash_bytes, extents, hbm_granted."""
        u = _Usage()
        n = ctypes.c_size_t()
        self._check("ho_stats", _fn("ho_stats")(self.handle, None, 0,
                                                ctypes.byref(n),
                                                ctypes.byref(u)))
        return {k: getattr(u, k) for k, _ in _Usage._fields_}

    def plan_request(self, trace, budget=0, planner=None):
        """ho_plan_request: ask the daemon for a plan of ``trace`` (a
        :class:`Trace`) for ``budget`` bytes (0: the session's grant) with
        ``planner`` (None: the daemon's default).  Returns a :class:`Plan`.
        Raises HoError HO_E_INFEASIBLE (its detail names the smallest
        feasible budget) when no schedule fits."""
        h = _P()
        self._check("ho_plan_request", _fn("ho_plan_request")(
            self.handle, trace.handle, budget, _b(planner), ctypes.byref(h)))
        return Plan(h, trace)


# ----------------------------------------------------------------- traces
class Trace(_Owned):
    """A step trace (ho_trace), loaded from a JSON or protobuf file."""

    _free = "ho_trace_free"
    _what = "trace"

    @classmethod
    def load(cls, path):
        h = _P()
        rc = _fn("ho_trace_load")(_b(path), ctypes.byref(h))
        if rc < 0:
            raise HoError("ho_trace_load", rc,
                          "%s: %s" % (path, runtime_last_error()))
        return cls(h)

    @property
    def ops(self):
        return _fn("ho_trace_ops")(self.handle)


class Plan(_Owned):
    """A plan (ho_plan) of a trace; keeps the trace alive."""

    _free = "ho_plan_free"
    _what = "plan"

    def __init__(self, handle, trace):
        super().__init__(handle)
        self.trace = trace

    def info(self):
        """ho_plan_get_info as a dict (planner, budget_bytes,
        no_offload_peak, min_budget, peak_device_bytes, peak_host_bytes,
        compute_us, step_time_us, exposed_us, h2d_bytes, d2h_bytes,
        planning_ms, cached, actions)."""
        i = _PlanInfo()
        _fn("ho_plan_get_info")(self.handle, ctypes.byref(i))
        d = {k: getattr(i, k) for k, _ in _PlanInfo._fields_}
        d["planner"] = i.planner.decode("utf-8", "replace")
        d["cached"] = bool(i.cached)
        return d

    def save(self, path):
        """ho_plan_save: write the schedule as JSON (PLANNER.md section
        2)."""
        rc = _fn("ho_plan_save")(self.handle, _b(path))
        if rc < 0:
            raise HoError("ho_plan_save", rc,
                          "%s: %s" % (path, runtime_last_error()))

