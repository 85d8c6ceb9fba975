// What ReTool's code tool does to the model's code before it runs (MindSpeed-RL's `ReTool`, verl's ReTool recipe):
// the code inside a ```python fence is taken out of it, and the value of a trailing expression is printed, as a
// notebook cell shows it. Models cold-started on ReTool's data write code that relies on both.

const FENCE = /```(?:python|py)?[ \t]*\r?\n?([\s\S]*?)```/;

/** The code of the first ```python fence (ReTool keeps the first), or the text as it is when there is none. */
export function stripCodeFence(code: string): string {
  const m = FENCE.exec(code);
  return m ? m[1]!.trim() : code;
}

/**
 * A program that runs `code` and then prints the value of its last statement when that is an expression whose
 * value is not None (`x`, `f(3)`, `sp.solve(eq)`; `print(x)` itself gives None, so nothing is printed twice).
 * ReTool does this by wrapping the last line's text in print(); a parse is exact where that is not (an
 * assignment, a multi-line call). Errors read as they would from plain `python`: a syntax error as Python prints
 * it, a traceback without this wrapper's frame, exit status 1.
 */
export function printLastExpression(code: string): string {
  return `${PRELUDE}__toolrl_run(${JSON.stringify(code)})\n`;
}

const PRELUDE = `import ast as __toolrl_ast, linecache as __toolrl_linecache, sys as __toolrl_sys, traceback as __toolrl_tb
def __toolrl_run(src):
    name = "main.py"
    __toolrl_linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    try:
        tree = __toolrl_ast.parse(src, name)
    except SyntaxError as e:
        __toolrl_sys.stderr.write("".join(__toolrl_tb.format_exception_only(type(e), e)))
        __toolrl_sys.exit(1)
    last = None
    if tree.body and isinstance(tree.body[-1], __toolrl_ast.Expr):
        last = __toolrl_ast.Expression(tree.body.pop().value)
    scope = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(tree, name, "exec"), scope)
        if last is not None:
            value = eval(compile(last, name, "eval"), scope)
            if value is not None:
                print(value)
    except SystemExit:
        raise
    except BaseException as e:
        __toolrl_sys.stdout.flush()
        __toolrl_tb.print_exception(type(e), e, e.__traceback__.tb_next)
        __toolrl_sys.exit(1)
`;
