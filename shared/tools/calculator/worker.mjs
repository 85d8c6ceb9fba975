// Evaluates calculator expressions off the main thread (plain JS: Node workers cannot load TypeScript
// without a loader). The parent bounds time and heap; this file bounds what an expression may contain.
import { parentPort } from 'node:worker_threads';
import { all, create } from 'mathjs';

const math = create(all, { number: 'number' });
const parse = math.parse;
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
const CONSTANTS = new Set(['pi', 'e', 'tau', 'phi', 'PI', 'E', 'Infinity', 'NaN', 'true', 'false']);
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

function evaluate(expression) {
  const node = parse(expression);
  check(node);
  const value = node.compile().evaluate({});
  if (typeof value === 'function') throw new Error('expression evaluates to a function');
  // Plain digits up to 1e21 (mathjs switches to exponents at 1e5 by default: 182262 would read 1.82262e+5).
  const text = math.format(value, { precision: 14, lowerExp: -9, upperExp: 21 });
  if (text.length > MAX_RESULT_CHARS) throw new Error(`result is longer than ${MAX_RESULT_CHARS} characters`);
  return text;
}

parentPort.on('message', ({ id, expression }) => {
  try {
    parentPort.postMessage({ id, ok: true, value: evaluate(expression) });
  } catch (err) {
    parentPort.postMessage({ id, ok: false, error: String(err?.message ?? err) });
  }
});

parentPort.postMessage({ ready: true });
