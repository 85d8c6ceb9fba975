// Evaluates calculator expressions off the main thread (plain JS: Node workers cannot load TypeScript
// without a loader). The parent bounds time and heap; this file bounds what an expression may contain.
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

// mathjs's single-file build, which the package exports for this: a fresh worker loads one file instead of
// resolving and compiling ~1,000 ES modules (measured on an idle core: 0.07-0.1 s against 0.86 s for
// `import 'mathjs'`). Every run starts a pool of these workers while its first rollouts need the same cores.
const { all, create } = createRequire(import.meta.url)('mathjs/lib/browser/math.js');

const math = create(all, { number: 'number' });
const parse = math.parse;
// Python's names for the same things (`math.comb`, `int(...)`, `math.inf`): models write Python arithmetic, and
// the ToolRL seed's calculator was Python's eval. Each is a plain numeric function, safe like the rest.
const PYTHON_FUNCTIONS = {
  comb: math.combinations,
  perm: math.permutations,
  isqrt: (x) => Math.floor(Math.sqrt(x)),
  trunc: math.fix,
  int: math.fix,
  float: (x) => Number(x),
  fabs: math.abs,
};
math.import({ ...PYTHON_FUNCTIONS, inf: Number.POSITIVE_INFINITY });

// mathjs's own hardening advice: keep private references, then disable every function that can
// define functions, units or parse/evaluate strings from inside an expression.
const disabled = (name) => () => {
  throw new Error(`function ${name} is disabled`);
};
// The allow-list in check() already keeps every other function out of reach.
const DISABLED = [
  'import',
  'createUnit',
  'evaluate',
  'parse',
  'compile',
  'simplify',
  'derivative',
  'resolve',
  'parser',
  'chain',
  'reviver',
];
math.import(Object.fromEntries(DISABLED.map((n) => [n, disabled(n)])), { override: true });

const FUNCTIONS = new Set([
  'abs',
  'sqrt',
  'cbrt',
  'exp',
  'expm1',
  'log',
  'log10',
  'log2',
  'log1p',
  'sin',
  'cos',
  'tan',
  'asin',
  'acos',
  'atan',
  'atan2',
  'sinh',
  'cosh',
  'tanh',
  'sec',
  'csc',
  'cot',
  'floor',
  'ceil',
  'round',
  'fix',
  'sign',
  'pow',
  'mod',
  'min',
  'max',
  'mean',
  'median',
  'sum',
  'prod',
  'std',
  'variance',
  'gcd',
  'lcm',
  'factorial',
  'gamma',
  'combinations',
  'permutations',
  'nthRoot',
  'hypot',
  'isPrime',
  'cube',
  'square',
]);
for (const name of Object.keys(PYTHON_FUNCTIONS)) FUNCTIONS.add(name);
const CONSTANTS = new Set(['pi', 'e', 'tau', 'phi', 'PI', 'E', 'Infinity', 'NaN', 'true', 'false', 'inf']);
const NODES = new Set([
  'ConstantNode',
  'OperatorNode',
  'ParenthesisNode',
  'FunctionNode',
  'SymbolNode',
  'ConditionalNode',
  'ArrayNode',
]);
export const MAX_NODES = 400;
export const MAX_RESULT_CHARS = 4000;

function check(root) {
  let count = 0;
  root.traverse((node, path, parent) => {
    if (++count > MAX_NODES) throw new Error(`expression is too large (more than ${MAX_NODES} nodes)`);
    if (!NODES.has(node.type)) throw new Error(`${describe(node)} is not allowed in a calculator expression`);
    if (node.type === 'FunctionNode' && !(node.fn.type === 'SymbolNode' && FUNCTIONS.has(node.fn.name)))
      throw new Error(`function ${node.fn.name ?? node.fn.toString()} is not available`);
    if (node.type === 'SymbolNode' && !(parent?.type === 'FunctionNode' && path === 'fn')) {
      // A bare symbol is a constant or a unit; a function reference could be called indirectly.
      if (!CONSTANTS.has(node.name) && !math.Unit.isValuelessUnit(node.name))
        throw new Error(`unknown symbol ${node.name}`);
    }
  });
}

function describe(node) {
  const names = {
    AssignmentNode: 'assignment',
    FunctionAssignmentNode: 'function definition',
    BlockNode: 'several statements',
    RangeNode: 'a range',
    ObjectNode: 'an object',
    AccessorNode: 'property access',
    IndexNode: 'indexing',
  };
  return names[node.type] ?? node.type;
}

/** Marks `//` for the parse: mathjs has no floor division, and `./` (element-wise division) has its precedence. */
const FLOOR_DIVISION = './';

/**
 * Python and typeset arithmetic as mathjs reads it: `**` is `^`, `a // b` is floor(a / b), `%` is already a
 * modulo with Python's sign rule, `×`/`÷`/`−` are `*`/`/`/`-`, and the `math.` of `math.sqrt(2)` is dropped.
 * `^` stays mathjs's power (what a model means by `2^10`), not Python's XOR.
 */
export function pythonToMathjs(expression) {
  let text = expression.replace(/×/g, '*').replace(/÷/g, '/').replace(/−/g, '-');
  text = text.replace(/\bmath\.(?=[A-Za-z_])/g, '').replace(/\*\*/g, '^');
  const floorDivision = text.includes('//') && !text.includes(FLOOR_DIVISION);
  if (floorDivision) text = text.replace(/\/\//g, FLOOR_DIVISION);
  return { text, floorDivision };
}

function evaluate(expression) {
  const { text, floorDivision } = pythonToMathjs(expression);
  let node = parse(text);
  if (floorDivision)
    node = node.transform((n) =>
      n.type === 'OperatorNode' && n.fn === 'dotDivide'
        ? new math.FunctionNode(new math.SymbolNode('floor'), [new math.OperatorNode('/', 'divide', n.args)])
        : n,
    );
  check(node);
  const value = node.compile().evaluate({});
  if (typeof value === 'function') throw new Error('expression evaluates to a function');
  // Plain digits up to 1e21 (mathjs switches to exponents at 1e5 by default: 182262 would read 1.82262e+5).
  const result = math.format(value, { precision: 14, lowerExp: -9, upperExp: 21 });
  if (result.length > MAX_RESULT_CHARS)
    throw new Error(`result is longer than ${MAX_RESULT_CHARS} characters`);
  return result;
}

// The parent's clock for an expression starts when this thread starts evaluating it (`started`: the epoch ms, 0
// between expressions), not when it was posted: on a loaded machine the thread may wait seconds to run at all, and
// an expression timed out for that wait made the same seed give a different answer. Results go back on their own
// port, which the parent can read synchronously when its timer fires (a result already sent is never a timeout).
const started = new BigInt64Array(workerData.started);
const results = workerData.results;
parentPort.on('message', ({ id, expression }) => {
  Atomics.store(started, 0, BigInt(Date.now()));
  try {
    results.postMessage({ id, ok: true, value: evaluate(expression) });
  } catch (err) {
    results.postMessage({ id, ok: false, error: String(err?.message ?? err) });
  } finally {
    Atomics.store(started, 0, 0n);
  }
});

parentPort.postMessage({ ready: true });
