# The code interpreter's driver, run as `python3 -u -c <this file> MODE`.
#
# MODE "once" (stateless): the cell is read from stdin, run, and the
# process exits.
#
# MODE "session": a persistent interpreter. It writes "\x1eready\n", then
# reads requests from stdin, each a header line "<nonce> <length>\n" and
# <length> bytes of UTF-8 source, runs the cell in one globals dict kept
# across cells, and writes "\n\x1e<nonce> <status>\n" after the cell's
# output (status 0: ran, 1: raised).
#
# In both modes stderr is merged into stdout (so output keeps its order),
# stdin of the cell is /dev/null, and a cell behaves as a notebook cell:
# the value of a final expression statement is printed (its repr) unless it
# is None. Tracebacks name the cell "<cell N>" and show no frame of this
# driver.
# Imports are few and cheap (_ast is built in): a stateless call pays for
# them each time. traceback and linecache are imported when a cell fails.
import _ast
import os
import sys


def report(e, tb, name, src):
    import linecache
    import traceback

    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    while tb is not None and tb.tb_frame.f_code.co_filename == DRIVER:
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb)


def run_cell(src, g, name):
    try:
        tree = compile(src, name, "exec", _ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError) as e:
        report(e, None, name, src)
        return 1
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = _ast.Expression(tree.body.pop().value)
    try:
        exec(compile(tree, name, "exec"), g)
        if last is not None:
            value = eval(compile(last, name, "eval"), g)
            if value is not None:
                print(repr(value))
    except BaseException as e:  # SystemExit and KeyboardInterrupt too: the interpreter goes on
        report(e, e.__traceback__, name, src)
        return 1
    return 0


DRIVER = run_cell.__code__.co_filename


def flush():
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            f.flush()
        except Exception:
            pass


def read_exact(f, n):
    chunks = []
    while n > 0:
        b = f.read(n)
        if not b:
            raise EOFError
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)  # exact big-number output
    if mode == "once":
        src = sys.stdin.buffer.read().decode("utf-8", "replace")
    elif mode == "session":
        ctl_in = os.fdopen(os.dup(0), "rb", buffering=0)
        ctl_out = os.dup(1)
    else:
        sys.exit("driver: mode must be once or session")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(1, 2)
    sys.argv = [""]
    g = {"__name__": "__main__", "__builtins__": __builtins__}
    if mode == "once":
        status = run_cell(src, g, "<cell 1>")
        flush()
        sys.exit(status)
    os.write(ctl_out, b"\x1eready\n")
    n = 0
    while True:
        header = ctl_in.readline()
        if not header:
            return
        nonce, length = header.split()
        try:
            src = read_exact(ctl_in, int(length)).decode("utf-8", "replace")
        except EOFError:
            return
        n += 1
        status = run_cell(src, g, "<cell %d>" % n)
        flush()
        os.write(ctl_out, b"\n\x1e" + nonce + b" " + str(status).encode() + b"\n")


main()
