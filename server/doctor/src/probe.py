"""tpulint doctor probe: reports facts about this Python environment as one JSON object on stdout.

Run by `tpulint doctor` inside the interpreter being checked. It never installs, downloads or
writes anything (the interpreter is started with -B so not even bytecode is written). Every import
and the optional TPU allocation run in a child process of their own, in a new session, with a
timeout: a module that hangs or crashes is killed (its whole process group) and reported, and the
report is still produced. Syntax is kept to Python 3.6 so an old interpreter still reports its
version instead of a SyntaxError.

argv[1] is a JSON object: {"import_timeout": seconds, "allocate": bool}.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

# The probe is started with `-c`, which puts the current directory first on sys.path; drop it so a
# stray `torch.py` in the working directory cannot shadow the installed package.
sys.path[:] = [entry for entry in sys.path if entry not in ("", ".")]

PROBE_VERSION = 1
RESULT_MARKER = "@@TPULINT_RESULT@@"

# Distributions reported (canonical names as pip spells them on the command line).
DISTRIBUTIONS = [
    "torch",
    "torch_xla",
    "torch_tpu",
    "libtpu",
    "libtpu-nightly",
    "jax",
    "jaxlib",
    "torchvision",
    "torchaudio",
    "numpy",
    "tensorflow",
    "tensorflow-cpu",
    "transformers",
    "vllm-torchtpu",
    "vllm-torchtpu-core",
    "tpu-sync-torch",
]

# Modules imported (each in its own child), in dependency order, with the modules they need.
MODULES = [
    ("numpy", []),
    ("torch", ["numpy"]),
    ("torch_xla", ["torch"]),
    ("torch_tpu", ["torch"]),
    ("libtpu", []),
    ("torchvision", ["torch"]),
    ("torchaudio", ["torch"]),
    ("jax", []),
]

ENV_PREFIXES = ("PJRT_", "TPU_", "XLA_", "TORCH_TPU_", "PT_XLA_", "LIBTPU_")
ENV_NAMES = (
    "TORCH_DEVICE_BACKEND_AUTOLOAD",
    "ALLOW_MULTIPLE_LIBTPU_LOAD",
    "CLOUD_TPU_TASK_ID",
    "JAX_PLATFORMS",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    # torchrun's variables (a TorchTPU multi-process launch needs them before init).
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "GROUP_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)

# Code run in each child before its work: die with the probe (Linux parent-death signal) so a
# killed probe cannot leave an import running, and drop the working directory from sys.path.
CHILD_PREAMBLE = r"""
import os, sys, json, time
sys.path[:] = [e for e in sys.path if e not in ("", ".")]
try:
    import ctypes
    ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != int(os.environ.get("TPULINT_PROBE_PID", "0")):
        os._exit(3)
except Exception:
    pass
MARK = __RESULT_MARKER__
def emit(obj):
    sys.stdout.write("\n" + MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()
def gist(exc):
    text = str(exc).strip().splitlines()
    return (type(exc).__name__, text[0][:400] if text else "")
""".replace("__RESULT_MARKER__", repr(RESULT_MARKER))

IMPORT_CODE = CHILD_PREAMBLE + r"""
name = sys.argv[1]
started = time.time()
try:
    import importlib
    module = importlib.import_module(name)
except BaseException as exc:
    import traceback
    traceback.print_exc()
    kind, message = gist(exc)
    emit({"ok": False, "error_type": kind, "error": message, "seconds": time.time() - started})
    sys.exit(0)
result = {"ok": True, "seconds": time.time() - started}
version = getattr(module, "__version__", None)
result["version"] = None if version is None else str(version)
result["file"] = getattr(module, "__file__", None)
if name == "torch_tpu":
    import importlib.util
    try:
        result["has_internal"] = importlib.util.find_spec("torch_tpu._internal") is not None
    except BaseException:
        result["has_internal"] = False
if name == "torch":
    result["has_tpu_module"] = hasattr(module, "tpu")
emit(result)
"""

ALLOCATE_CODE = CHILD_PREAMBLE + r"""
backend = sys.argv[1]
started = time.time()
try:
    import torch
    if backend == "torch_xla":
        import torch_xla
        device = "xla"
    else:
        if not hasattr(torch, "tpu"):
            # Older TorchTPU builds register the device on import / api.tpu_device().
            import torch_tpu
            api = getattr(torch_tpu, "api", None)
            if api is not None and hasattr(api, "tpu_device"):
                api.tpu_device()
        device = "tpu"
    ones = torch.ones(2, 2, device=device)
    product = ones @ ones
    # Where the product actually landed: a backend that cannot reach the TPU computes on the CPU.
    landed = product.device
    landed_kind = getattr(landed, "type", None) or str(landed).split(":")[0]
    hardware = None
    if backend == "torch_xla":
        try:
            import torch_xla.runtime as xr
            hardware = str(xr.device_type())
        except BaseException:
            hardware = None
    values = product.cpu().tolist()
except BaseException as exc:
    import traceback
    traceback.print_exc()
    kind, message = gist(exc)
    emit({"ok": False, "error_type": kind, "error": message, "seconds": time.time() - started})
    sys.exit(0)
ok = values == [[2.0, 2.0], [2.0, 2.0]]
emit({
    "ok": ok,
    "error": None if ok else "the 2x2 matmul returned %r" % (values,),
    "device": str(landed),
    "device_kind": landed_kind,
    "hardware": hardware,
    "result": values,
    "seconds": time.time() - started,
})
"""


def run_child(code, argument, timeout):
    """Runs `code` in a fresh interpreter; returns a dict describing what happened."""
    env = dict(os.environ)
    env["TPULINT_PROBE_PID"] = str(os.getpid())
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    started = time.time()
    try:
        child = subprocess.Popen(
            [sys.executable, "-B", "-c", code, argument],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return {"ok": False, "status": "failed", "error_type": type(exc).__name__, "error": str(exc)}
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(child)
        return {
            "ok": False,
            "status": "timed_out",
            "error": "no answer after %.0f s; the child and its process group were killed" % timeout,
            "seconds": time.time() - started,
        }
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    result = None
    for line in out.splitlines():
        if line.startswith(RESULT_MARKER):
            try:
                result = json.loads(line[len(RESULT_MARKER):])
            except ValueError:
                result = None
    if result is None:
        code_desc = child.returncode
        if code_desc is not None and code_desc < 0:
            try:
                signame = signal.Signals(-code_desc).name
            except (ValueError, AttributeError):
                signame = "signal %d" % -code_desc
            status, message = "crashed", "killed by %s" % signame
        else:
            status, message = "failed", "exited with code %s without a result" % code_desc
        return {
            "ok": False,
            "status": status,
            "error": message,
            "stderr_tail": tail(err),
            "seconds": time.time() - started,
        }
    result["status"] = "ok" if result.get("ok") else "failed"
    if not result.get("ok"):
        result["stderr_tail"] = tail(err)
        symbol = re.search(r"undefined symbol: (\S+)", result.get("error", "") + "\n" + err)
        if symbol:
            result["undefined_symbol"] = symbol.group(1)
    return result


def kill_group(child):
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        child.kill()
    except OSError:
        pass
    try:
        child.communicate(timeout=5)
    except Exception:
        pass


def tail(text, lines=12):
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(kept[-lines:])[-2000:]


def python_facts():
    info = sys.version_info
    facts = {
        "version": "%d.%d.%d" % (info[0], info[1], info[2]),
        "release_level": info[3],
        "implementation": getattr(getattr(sys, "implementation", None), "name", "unknown"),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "platform": sys.platform,
    }
    facts["in_virtualenv"] = facts["prefix"] != facts["base_prefix"] or hasattr(sys, "real_prefix")
    try:
        import site

        facts["user_site"] = site.getusersitepackages()
        facts["user_site_enabled"] = bool(site.ENABLE_USER_SITE)
    except Exception:
        facts["user_site"] = None
        facts["user_site_enabled"] = False
    try:
        import platform

        facts["machine"] = platform.machine()
    except Exception:
        facts["machine"] = None
    return facts


def distribution_facts():
    try:
        import importlib.metadata as metadata
    except ImportError:
        return None
    found = {}
    for name in DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        except Exception as exc:  # a broken dist-info must not end the report
            found[name] = {"name": name, "error": str(exc)}
            continue
        meta = dist.metadata
        files = []
        try:
            files = [str(path) for path in (dist.files or [])]
        except Exception:
            files = []
        project_urls = meta.get_all("Project-URL") or []
        location = None
        try:
            location = str(dist.locate_file(""))
        except Exception:
            pass
        found[name] = {
            "name": meta.get("Name") or name,
            "version": dist.version,
            "summary": meta.get("Summary"),
            "home_page": meta.get("Home-page"),
            "author": meta.get("Author"),
            "author_email": meta.get("Author-email"),
            "project_urls": list(project_urls),
            "requires": list(dist.requires or []),
            "location": location,
            "files_sample": [f for f in files if interesting_file(f)][:50],
        }
    return found


def interesting_file(path):
    """Files that identify a distribution: TorchTPU internals, Sophgo's backend, bundled libtpu."""
    return (
        path.startswith("torch_tpu/_internal/")
        or path == "torch_tpu/tpu/backend.py"
        or path.endswith("libtpu.so")
    )


def environment_facts():
    env = {}
    for key, value in os.environ.items():
        if key.startswith(ENV_PREFIXES) or key in ENV_NAMES:
            env[key] = value
    return env


def main():
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    import_timeout = float(config.get("import_timeout", 30))
    report = {
        "probe_version": PROBE_VERSION,
        "python": python_facts(),
        "distributions": None,
        "metadata_available": True,
        "imports": {},
        "env": environment_facts(),
        "ld_library_path_set": bool(os.environ.get("LD_LIBRARY_PATH")),
        "allocation": [],
    }
    distributions = distribution_facts()
    if distributions is None:
        report["metadata_available"] = False
        distributions = {}
    report["distributions"] = distributions

    try:
        import importlib.util

        def findable(name):
            try:
                return importlib.util.find_spec(name) is not None
            except Exception:
                return True  # let the import itself report the problem
    except ImportError:

        def findable(name):
            return True

    imports = report["imports"]
    for module, needs in MODULES:
        if not findable(module):
            imports[module] = {"ok": False, "status": "not_installed"}
            continue
        blocked = [n for n in needs if imports.get(n, {}).get("status") not in ("ok", "not_installed", None)]
        if blocked:
            imports[module] = {
                "ok": False,
                "status": "skipped",
                "error": "not tried: %s did not import" % ", ".join(blocked),
            }
            continue
        imports[module] = run_child(IMPORT_CODE, module, import_timeout)

    if config.get("allocate"):
        backends = []
        if imports.get("torch_tpu", {}).get("status") == "ok" and imports["torch_tpu"].get("has_internal"):
            backends.append("torch_tpu")
        if imports.get("torch_xla", {}).get("status") == "ok":
            backends.append("torch_xla")
        for backend in backends:
            result = run_child(ALLOCATE_CODE, backend, float(config.get("allocate_timeout", import_timeout)))
            result["backend"] = backend
            report["allocation"].append(result)

    sys.stdout.write(RESULT_MARKER + json.dumps(report, sort_keys=True) + "\n")
    sys.stdout.flush()


main()
