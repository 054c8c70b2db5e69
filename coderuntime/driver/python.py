# The python3 session driver of subkit's coderuntime: one interpreter that runs cells sent by the
# host over a private control socket. Standard library only; IPython and matplotlib are used when
# the code imports them, never required.
#
# Usage: python3 driver.py SOCKET WORKDIR (the working directory is the session's directory, where
# SOCKET is). The token that proves this process is the one the host started comes in the
# environment variable SUBKIT_SESSION_TOKEN, which is removed before any cell runs.
#
# Protocol: frames of a 4-byte big-endian length and that many bytes of UTF-8 JSON.
#   host -> driver  {"type":"execute","id","count","code","nonce"}   {"type":"probe","id"}
#   driver -> host  {"type":"hello","token","pid","version"}
#                   {"type":"started","cell"}  (the cell's code is about to run: from then on SIGINT
#                    raises KeyboardInterrupt in it; the host interrupts a cell only after this)
#                   {"type":"result","cell","main","mime":{...},"count"?}  (display() and the main
#                    result; count: the earlier cell whose thread displayed it)
#                   {"type":"background_error","count","error":{name,value,traceback}}
#                   {"type":"done","cell","error":{name,value,traceback}|null,"marks":[out,err],
#                    "notes":[...]}
#                   {"type":"probe_ok","id"}
# After a cell, and before "done", the driver writes the end marker MARK_HEAD + nonce + MARK_TAIL
# to file descriptors 1 and 2, so the host knows where the cell's output ends; "marks" says on
# which of them the marker was written.
#
# Background errors: an exception that ends a thread (threading.excepthook) never ends the cell
# that runs meanwhile; it is sent at once as a background_error with the count of the cell whose
# code started the thread (a thread started by another thread takes its starter's count).
#
# matplotlib: pyplot.show() and the end of a cell turn every open figure into an image/png result
# (then close it) whatever the backend; a GUI backend that cannot open here gives way to the
# session's. What cannot be shown is said in the cell's notes.
import sys


def _subkit_session():
    import ast
    import base64
    import builtins
    import importlib.abc
    import importlib.util
    import io
    import json
    import linecache
    import os
    import signal
    import socket
    import struct
    import threading
    import traceback
    import types
    import warnings
    import weakref

    MARK_HEAD = b"\x1e\x1fsubkit-cell-end "
    MARK_TAIL = b"\x1f\x1e"
    MAX_FRAME = 64 << 20  # the host's limit
    MAX_BUNDLE = 32 << 20  # one result, all its MIME types together
    MAX_TEXT = 1 << 20  # text/plain of a result
    BACKEND = "subkit_inline_backend"

    here = os.path.abspath(__file__)
    sock_name, work = sys.argv[1], os.path.abspath(sys.argv[2])
    token = os.environ.pop("SUBKIT_SESSION_TOKEN", "")
    session_dir = os.getcwd()

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(sock_name)  # relative to the session directory: no socket path length limit
    os.chdir(work)

    # The private directories, longest first, as they may be spelled in paths.
    private = []
    for d in (work, session_dir):
        for p in (d, os.path.realpath(d)):
            if p + os.sep not in private:
                private.append(p + os.sep)
    private.sort(key=len, reverse=True)

    def relative(text):
        for p in private:
            text = text.replace(p, "")
        return text

    # What the code sees: an interactive __main__, no driver arguments, the cwd first on sys.path.
    sys.argv[:] = [""]
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(here):
        sys.path[0] = ""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    ns = main.__dict__

    # Output reaches the host line by line, as it happens.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(line_buffering=True)
        except (AttributeError, ValueError, io.UnsupportedOperation):
            pass
    std_ids = []
    for fd in (1, 2):
        try:
            st = os.fstat(fd)
            std_ids.append((st.st_dev, st.st_ino))
        except OSError:
            std_ids.append(None)

    # Warnings name files relative to the working directory, as tracebacks do.
    format_warning = warnings.formatwarning

    def relative_formatwarning(message, category, filename, lineno, line=None):
        return relative(format_warning(message, category, filename, lineno, line))

    warnings.formatwarning = relative_formatwarning

    class State:
        cell = None  # id of the cell running
        count = 0  # its count, and the last one's between cells
        executing = False  # the cell's own code runs: SIGINT raises KeyboardInterrupt
        sending = False  # the main thread is in the middle of a frame
        interrupted = False  # SIGINT came while sending

    state = State()
    send_lock = threading.Lock()
    main_thread = threading.main_thread()

    def on_sigint(signum, frame):
        if not state.executing:
            return  # between cells: the session goes on
        if state.sending and threading.current_thread() is main_thread:
            state.interrupted = True
            return
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)

    def send(msg):
        data = json.dumps(msg).encode("utf-8")
        if len(data) > MAX_FRAME:
            return False
        in_main = threading.current_thread() is main_thread
        with send_lock:
            if in_main:
                state.sending = True
            try:
                conn.sendall(struct.pack(">I", len(data)) + data)
            finally:
                if in_main:
                    state.sending = False
        if in_main and state.interrupted and state.executing:
            state.interrupted = False
            raise KeyboardInterrupt
        return True

    def recv_exact(n):
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            try:
                k = conn.recv_into(view[got:])
            except (KeyboardInterrupt, InterruptedError):
                continue
            if k == 0:
                return None
            got += k
        return bytes(buf)

    def recv():
        head = recv_exact(4)
        if head is None:
            return None
        (n,) = struct.unpack(">I", head)
        if n > MAX_FRAME:
            return None
        body = recv_exact(n)
        return None if body is None else json.loads(body.decode("utf-8"))

    # MIME bundles: the IPython display protocol (_repr_*_ methods, _repr_mimebundle_) for any
    # object, matplotlib figures as PNG, text/plain always.
    reprs = (
        ("text/html", "_repr_html_"),
        ("text/markdown", "_repr_markdown_"),
        ("image/svg+xml", "_repr_svg_"),
        ("image/png", "_repr_png_"),
        ("image/jpeg", "_repr_jpeg_"),
        ("text/latex", "_repr_latex_"),
        ("application/json", "_repr_json_"),
        ("application/javascript", "_repr_javascript_"),
        ("application/pdf", "_repr_pdf_"),
    )
    binary = ("image/png", "image/jpeg", "application/pdf")

    def encode(mime, value):
        if isinstance(value, tuple) and value:
            value = value[0]  # (data, metadata)
        if value is None:
            return None
        if mime in binary:
            if isinstance(value, str):
                return value  # already base64, as IPython keeps it
            return base64.b64encode(bytes(value)).decode("ascii")
        if mime == "application/json" and not isinstance(value, str):
            return json.dumps(value, default=repr)
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        return str(value)

    def cap_text(s):
        if len(s) > MAX_TEXT:
            return s[:MAX_TEXT] + "\n... (%d more characters)" % (len(s) - MAX_TEXT)
        return s

    def figure_png(fig):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        return base64.b64encode(buf.getvalue()).decode("ascii")

    notes = []  # what the session says about the cell running, besides its output

    def note(text):
        if len(notes) < 20:
            notes.append(relative(text)[:4096])

    def unrendered(fig, exc):
        try:
            num = " %s" % fig.number
        except Exception:
            num = ""
        note("matplotlib figure%s could not be rendered as PNG, so it is not among the results: %s: %s. "
             "Fix what the message names, then show the figure with display(fig)."
             % (num, type(exc).__name__, exc))

    def is_figure(obj):
        mod = sys.modules.get("matplotlib.figure")
        return mod is not None and isinstance(obj, mod.Figure)

    def bundle(obj):
        data = {}
        if not isinstance(obj, type):
            m = getattr(obj, "_repr_mimebundle_", None)
            if callable(m):
                try:
                    got = m(include=None, exclude=None)
                    if isinstance(got, tuple):
                        got = got[0]
                    for mime, value in dict(got or {}).items():
                        v = encode(mime, value)
                        if v is not None:
                            data[str(mime)] = v
                except Exception:
                    pass
            for mime, attr in reprs:
                if mime in data:
                    continue
                f = getattr(obj, attr, None)
                if not callable(f):
                    continue
                try:
                    v = encode(mime, f())
                except Exception:
                    continue
                if v is not None:
                    data[mime] = v
            if "image/png" not in data and is_figure(obj):
                shown.add(id(obj))
                try:
                    data["image/png"] = figure_png(obj)
                except Exception as exc:
                    unrendered(obj, exc)
        if "text/plain" not in data:
            try:
                data["text/plain"] = repr(obj)
            except Exception as exc:
                data["text/plain"] = "<%s object (repr failed: %s)>" % (type(obj).__name__, type(exc).__name__)
        data["text/plain"] = cap_text(data["text/plain"])
        size = sum(len(v) for v in data.values())
        if size > MAX_BUNDLE:
            data = {"text/plain": cap_text(data["text/plain"]) + "\n(other MIME types left out: %d bytes, above the limit)" % size}
        return data

    def publish(data, main_result=False):
        data = {str(k): encode(str(k), v) for k, v in data.items()}
        data = {k: v for k, v in data.items() if v is not None}
        if "text/plain" not in data:
            data["text/plain"] = "<display data: %s>" % ", ".join(sorted(data))
        msg = {"type": "result", "cell": state.cell, "main": main_result, "mime": data}
        thread = threading.current_thread()
        if thread is not main_thread:
            origin = started_by.get(thread, 0)
            if origin and (state.cell is None or origin != state.count):
                msg["count"] = origin  # displayed by a thread of an earlier cell
        if not send(msg):
            msg["mime"] = {"text/plain": "(a result too large to send)"}
            send(msg)

    shown = set()  # ids of the figures this cell displayed

    def display(*objs, raw=False, **_ignored):
        """display(obj, ...) shows each object as a rich result (text/plain and every MIME type it
        offers: _repr_html_, _repr_png_, ..., a matplotlib figure as image/png); display(bundle,
        raw=True) shows a dict {mime: data} as it is."""
        for obj in objs:
            if raw and isinstance(obj, dict):
                publish(obj)
            else:
                publish(bundle(obj))

    def publish_display_data(data, metadata=None, *args, **kwargs):
        publish(dict(data))

    ns["display"] = display

    # IPython: its display() and publish_display_data() become the session's when the code
    # imports IPython (patched as the module loads, before IPython.display re-exports them).
    # matplotlib: the default backend shows figures as image/png results.
    backend_source = (
        "from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas\n"
        "from matplotlib.backend_bases import FigureManagerBase as FigureManager\n"
        "show = None\n"
    )

    class Loader(importlib.abc.Loader):
        def __init__(self, inner, after):
            self.inner, self.after = inner, after

        def create_module(self, spec):
            return self.inner.create_module(spec) if self.inner is not None else None

        def exec_module(self, module):
            if self.inner is not None:
                self.inner.exec_module(module)
            self.after(module)

    def patch_ipython(module):
        if hasattr(module, "display"):
            module.display = display
        if hasattr(module, "publish_display_data"):
            module.publish_display_data = publish_display_data

    def fill_backend(module):
        exec(compile(backend_source, "<subkit backend>", "exec"), module.__dict__)

        def show(close=None, block=None):
            flush_figures()

        module.show = show

    # GUI backends: when one cannot open here, the session's backend takes its place.
    gui_backends = {
        "gtk3agg", "gtk3cairo", "gtk4agg", "gtk4cairo", "macosx", "nbagg", "notebook", "qtagg",
        "qtcairo", "qt5agg", "qt5cairo", "qt4agg", "tkagg", "tkcairo", "webagg", "wx", "wxagg",
        "wxcairo", "ipympl", "widget",
    }

    def is_gui_backend(name):
        name = str(name).lower()
        if name in gui_backends:
            return True
        try:
            from matplotlib import rcsetup
            return name in {b.lower() for b in getattr(rcsetup, "interactive_bk", ())}
        except Exception:
            return False

    def patch_pyplot(module):
        switch = getattr(module, "switch_backend", None)
        if callable(switch):
            def switch_backend(newbackend, *args, **kwargs):
                try:
                    return switch(newbackend, *args, **kwargs)
                except ImportError as exc:
                    if not is_gui_backend(newbackend):
                        raise
                    switch("module://" + BACKEND)
                    note("matplotlib backend %r cannot open here (%s); the session's backend took its place, "
                         "so figures come back as image/png results at plt.show() and at the end of the cell."
                         % (str(newbackend), exc))

            switch_backend.__doc__ = switch.__doc__
            switch_backend.__wrapped__ = switch
            module.switch_backend = switch_backend

        original = getattr(module, "show", None)

        def show(*args, **kwargs):
            """Shows every open figure as an image/png result of the cell, and closes it."""
            # A third-party backend the code chose (module://...) shows them its way first; a GUI
            # backend's show would block or give nothing here, Agg's gives nothing.
            backend = str(module.get_backend())
            if original is not None and backend.startswith("module://") and backend != "module://" + BACKEND:
                original(*args, **kwargs)
            flush_figures()

        if original is not None:
            show.__wrapped__ = original
        module.show = show

    class Finder(importlib.abc.MetaPathFinder):
        targets = {
            "IPython.core.display_functions": patch_ipython,
            "IPython.core.display": patch_ipython,
            "matplotlib.pyplot": patch_pyplot,
        }

        def find_spec(self, name, path=None, target=None):
            if name == BACKEND:
                return importlib.util.spec_from_loader(name, Loader(None, fill_backend))
            after = self.targets.get(name)
            if after is None:
                return None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
            if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = Loader(spec.loader, after)
            return spec

    sys.meta_path.insert(0, Finder())

    def flush_figures():
        # Every open figure, whatever the backend: an Agg or a GUI backend's show() would give
        # nothing here.
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is None:
            return
        try:
            from matplotlib._pylab_helpers import Gcf
            for manager in list(Gcf.get_all_fig_managers()):
                fig = manager.canvas.figure
                if id(fig) not in shown:
                    data = bundle(fig)  # marks it shown; says why in the notes when it cannot render
                    if "image/png" in data:
                        publish(data)
        finally:
            pyplot.close("all")

    # Threads: which cell started each, for the exceptions that end them.
    started_by = weakref.WeakKeyDictionary()
    thread_start = threading.Thread.start

    def start(self, *args, **kwargs):
        starter = threading.current_thread()
        started_by[self] = state.count if starter is main_thread else started_by.get(starter, 0)
        return thread_start(self, *args, **kwargs)

    start.__doc__ = thread_start.__doc__
    start.__wrapped__ = thread_start
    threading.Thread.start = start

    def thread_excepthook(args):
        if args.exc_type is SystemExit:
            return  # as Python's own hook: a thread may end with it
        try:
            exc = args.exc_value if args.exc_value is not None else args.exc_type()
            err = code_error(exc)
            name = getattr(args.thread, "name", None) or "a thread"
            err["traceback"] = "Exception in thread %s:\n%s" % (name, err["traceback"])
            cell = started_by.get(args.thread, 0) if args.thread is not None else 0
            send({"type": "background_error", "count": cell, "error": err})
        except Exception:
            threading.__excepthook__(args)  # the channel is gone: as Python would

    threading.excepthook = thread_excepthook

    # Errors: the cell's frames only, private paths relative.
    def strip(te, seen):
        if te is None or id(te) in seen:
            return
        seen.add(id(te))
        te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != here])
        strip(te.__cause__, seen)
        strip(te.__context__, seen)
        for sub in getattr(te, "exceptions", None) or ():
            strip(sub, seen)

    def code_error(exc):
        try:
            te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
            strip(te, set())
            text = "".join(te.format())
        except Exception:
            text = "%s (the traceback could not be formatted)\n" % type(exc).__name__
        try:
            value = str(exc)
        except Exception:
            value = "<unprintable %s object>" % type(exc).__name__
        text, value = relative(text), relative(value)
        if len(value) > 8192:
            value = value[:8192] + "..."
        if len(text) > 65536:
            text = "...\n" + text[-65536:]
        return {"name": type(exc).__name__, "value": value, "traceback": text}

    loop = []

    def run(code):
        result = eval(code, ns)
        if code.co_flags & 0x80:  # CO_COROUTINE: the cell awaits at its top level
            import asyncio
            if not loop:
                loop.append(asyncio.new_event_loop())
            result = loop[0].run_until_complete(result)
        return result

    flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)

    def execute(source, filename):
        tree = ast.parse(source, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not source.rstrip().endswith(";"):
            last = ast.Expression(tree.body.pop().value)
        run(compile(tree, filename, "exec", flags=flags, dont_inherit=True))
        if last is None:
            return None
        return run(compile(last, filename, "eval", flags=flags, dont_inherit=True))

    def write_marker(fd, nonce, ident):
        try:
            st = os.fstat(fd)
            if ident is None or (st.st_dev, st.st_ino) != ident:
                return False  # the code moved the descriptor elsewhere: the host must not wait
            data = MARK_HEAD + nonce.encode("ascii") + MARK_TAIL
            while data:
                data = data[os.write(fd, data):]
            return True
        except OSError:
            return False

    def run_cell(msg):
        state.cell = msg["id"]
        state.count = msg["count"]
        shown.clear()
        del notes[:]
        filename = "<cell-%d>" % msg["count"]
        source = msg["code"]
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        error = None
        try:
            state.interrupted = False
            try:
                # From here SIGINT raises KeyboardInterrupt; the host sends it only once it has
                # "started", so none lands unseen while the cell is received or prepared.
                state.executing = True
                send({"type": "started", "cell": msg["id"]})
                value = execute(source, filename)
            finally:
                state.executing = False
            if value is not None:
                ns["_"] = value
                publish(bundle(value), main_result=True)
        except BaseException as exc:  # KeyboardInterrupt and SystemExit end the cell, not the session
            state.executing = False  # a SIGINT just as the code ended raises before the finally resets it
            error = code_error(exc)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)  # a KeyboardInterrupt between cells would break the channel
        try:
            flush_figures()
        except Exception:
            pass
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:
                pass
        marks = [write_marker(fd, msg["nonce"], std_ids[i]) for i, fd in enumerate((1, 2))]
        send({"type": "done", "cell": msg["id"], "error": error, "marks": marks, "notes": list(notes)})
        state.cell = None

    send({"type": "hello", "token": token, "pid": os.getpid(), "version": sys.version.split()[0]})
    while True:
        msg = recv()
        if msg is None:
            break
        kind = msg.get("type")
        if kind == "execute":
            run_cell(msg)
        elif kind == "probe":
            eval(compile("None", "<probe>", "eval"), ns)
            send({"type": "probe_ok", "id": msg.get("id")})
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(0)


_subkit_session()
