"""tpulint trace start-up hook (written by `tpulint trace run`; not part of your project).

Imported by Python at start-up because `tpulint trace run` puts its directory first on
PYTHONPATH. It changes nothing in the program: it chains to any other `sitecustomize`, records
which lines of the project ran (unless TPULINT_TRACE_COVERAGE=0), and at exit writes torch_xla's
counters and `executed_fallback_ops()` -- only if the program itself imported torch_xla -- to
TPULINT_TRACE_OUT/hook-<pid>.json. Any failure here is swallowed: the traced program must run as
it would without tpulint.
"""

import atexit
import json
import os
import sys

_OUT = os.environ.get("TPULINT_TRACE_OUT")
_ROOT = os.path.realpath(os.environ.get("TPULINT_TRACE_ROOT") or os.getcwd())
_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBRARY_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_lines = {}
_in_project = {}


def _project_file(filename):
    known = _in_project.get(filename)
    if known is None:
        path = os.path.realpath(filename) if filename and not filename.startswith("<") else ""
        known = bool(path) and path.startswith(_ROOT + os.sep) and not any(
            marker in path for marker in _LIBRARY_MARKERS
        ) and not path.startswith(_HERE + os.sep)
        known = path if known else False
        _in_project[filename] = known
    return known


def _install_coverage():
    if os.environ.get("TPULINT_TRACE_COVERAGE", "1") == "0" or sys.gettrace() is not None:
        return
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        tool = 4  # a free tool id; coverage.py uses 1, debuggers 0
        try:
            monitoring.use_tool_id(tool, "tpulint-trace")
        except ValueError:
            return

        def on_line(code, line):
            path = _project_file(code.co_filename)
            if path:
                _lines.setdefault(path, set()).add(line)
            # Each line is recorded once; afterwards it costs nothing.
            return monitoring.DISABLE

        monitoring.register_callback(tool, monitoring.events.LINE, on_line)
        monitoring.set_events(tool, monitoring.events.LINE)
        return

    import threading

    def local(frame, event, arg):
        if event == "line":
            _lines.setdefault(_project_file(frame.f_code.co_filename), set()).add(frame.f_lineno)
        return local

    def global_trace(frame, event, arg):
        if event == "call" and _project_file(frame.f_code.co_filename):
            _lines.setdefault(_project_file(frame.f_code.co_filename), set()).add(frame.f_lineno)
            return local
        return None

    sys.settrace(global_trace)
    threading.settrace(global_trace)


def _counters(metrics):
    counters = {}
    for name in metrics.counter_names():
        try:
            value = metrics.counter_value(name)
        except Exception:
            continue
        if value is not None:
            counters[name] = int(value)
    return counters


def _dump():
    if not _OUT:
        return
    sys.settrace(None)
    report = {
        "tpulint_hook": 1,
        "pid": os.getpid(),
        "argv": list(sys.argv),
        "python": sys.version.split()[0],
        "torch_xla": None,
        "executed_fallback_ops": [],
        "counters": {},
        "coverage": {
            path: sorted(line for line in lines if line and line > 0)
            for path, lines in _lines.items()
            if path
        },
    }
    if "torch_xla" in sys.modules:
        try:
            import torch_xla
            import torch_xla.debug.metrics as metrics

            report["torch_xla"] = getattr(torch_xla, "__version__", "unknown")
            report["executed_fallback_ops"] = list(metrics.executed_fallback_ops())
            report["counters"] = _counters(metrics)
        except Exception as error:  # the runtime may already be shutting down
            report["error"] = repr(error)
    try:
        os.makedirs(_OUT, exist_ok=True)
        with open(os.path.join(_OUT, "hook-%d.json" % os.getpid()), "w") as handle:
            json.dump(report, handle)
    except Exception:
        pass


def _chain():
    """Runs the `sitecustomize` this one shadows, if any (a venv's or the distribution's)."""
    import importlib.machinery
    import importlib.util

    path = [entry for entry in sys.path if os.path.abspath(entry or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    atexit.register(_dump)
    _install_coverage()
except Exception:
    pass
try:
    _chain()
except Exception as error:
    sys.stderr.write("tpulint trace: the original sitecustomize failed: %r\n" % (error,))
