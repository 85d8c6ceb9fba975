// Math answer equivalence: LaTeX noise stripped, then numbers compared as exact rationals (fraction.js parses
// decimals, fractions and repeating decimals without floating-point error) so 0.5 = 1/2 = \frac{1}{2}, with an
// optional relative tolerance for floats printed by code; anything else compares as normalised text.
import Fraction from 'fraction.js';
import { lastBoxed } from './answer.ts';

/** Longest numeric literal handed to the rational parser: bounds the work on hostile answers. */
const MAX_NUMBER_CHARS = 64;
const MAX_EXPONENT = 300;

const LATEX_NOISE = [
  /\\left|\\right|\\displaystyle/g,
  /\\[!,;:]|\\quad|\\qquad|\\ /g,
  /\^\s*\{?\s*\\circ\s*\}?/g,
  /\\%|%|\\\$/g,
];

/** Strips the parts of a written answer that do not change its value ($…$, \left, spacing, degrees, %). */
export function normaliseMathAnswer(answer: string): string {
  let s = answer.trim();
  if (s.startsWith('\\boxed') || s.startsWith('\\fbox')) s = lastBoxed(s) ?? s;
  s = s.replace(/^\$+|\$+$/g, '').replace(/^\\[([]|\\[)\]]$/g, '');
  for (const re of LATEX_NOISE) s = s.replace(re, '');
  s = s.replace(/\\[dt]frac/g, '\\frac').replace(/\{,\}/g, ',');
  // "x = 5": the value is the right-hand side when the left is a single symbol.
  const eq = s.lastIndexOf('=');
  if (eq >= 0 && s.slice(0, eq).trim().length <= 2) s = s.slice(eq + 1);
  s = s.replace(/\s+/g, '').replace(/\.$/, '');
  if (/^-?\d{1,3}(,\d{3})+(\.\d+)?$/.test(s)) s = s.replace(/,/g, '');
  return s;
}

function rational(literal: string): Fraction | null {
  if (literal.length > MAX_NUMBER_CHARS || !/^[+-]?(\d+\.?\d*(\(\d+\))?|\.\d+)$/.test(literal)) return null;
  try {
    return new Fraction(literal);
  } catch {
    return null;
  }
}

const divide = (a: Fraction | null, b: Fraction | null): Fraction | null =>
  a && b && !b.equals(0) ? a.div(b) : null;

/**
 * The value of a normalised answer that is a number: integer, decimal, repeating decimal `0.(3)`, `a/b`,
 * `\frac{a}{b}` / `\frac12`, or scientific (`1.5e3`, `1.5\times10^{3}`); units in `\text{…}` are ignored.
 */
export function parseMathNumber(normalised: string): Fraction | null {
  const s = normalised.replace(/\\(?:text|mbox|mathrm)\{[^{}]*\}/g, '');
  let m = /^([+-]?)\\frac\{([^{}]+)\}\{([^{}]+)\}$/.exec(s) ?? /^([+-]?)\\frac(\d)(\d)$/.exec(s);
  if (m) {
    const value = divide(rational(m[2]!), rational(m[3]!));
    return value && m[1] === '-' ? value.neg() : value;
  }
  m = /^([+-]?[\d.]+)\/([\d.]+)$/.exec(s);
  if (m) return divide(rational(m[1]!), rational(m[2]!));
  m = /^([+-]?[\d.]+)(?:[eE]|\\times10\^|\\cdot10\^|\*10\^|\*\*10\^?)\{?([+-]?\d+)\}?$/.exec(s);
  if (m) {
    const exponent = Number(m[2]);
    const mantissa = rational(m[1]!);
    if (!mantissa || Math.abs(exponent) > MAX_EXPONENT) return null;
    const scale = new Fraction(10).pow(Math.abs(exponent));
    return exponent >= 0 ? mantissa.mul(scale) : mantissa.div(scale);
  }
  return rational(s);
}

export interface MathCompareOptions {
  /** Two numbers also match when |a - b| <= rel_tol * max(|a|, |b|); 0 asks for exact equality. */
  relTol?: number;
}

/** Whether a predicted answer equals a golden one: as numbers when both are numbers, else as normalised text. */
export function mathAnswersEqual(predicted: string, gold: string, opts: MathCompareOptions = {}): boolean {
  const p = normaliseMathAnswer(predicted);
  const g = normaliseMathAnswer(gold);
  const pv = parseMathNumber(p);
  const gv = parseMathNumber(g);
  if (pv && gv) {
    if (pv.equals(gv)) return true;
    const relTol = opts.relTol ?? 0;
    const a = pv.valueOf();
    const b = gv.valueOf();
    return relTol > 0 && Math.abs(a - b) <= relTol * Math.max(Math.abs(a), Math.abs(b));
  }
  return p !== '' && p.toLowerCase() === g.toLowerCase();
}
