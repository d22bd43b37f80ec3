import { rates } from './rates.js';

export function total(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) * rates.eur;
}

export function fail(): never {
  throw new Error('no money');
}
