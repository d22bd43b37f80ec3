import type { Bill } from './types';

// parseBill reads one inbox file, refusing what a person must fix by hand: the error
// names the file and the field.
export function parseBill(name: string, text: string): Bill {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new Error(`${name}: not JSON: ${(e as Error).message}`);
  }
  const b = raw as Partial<Bill>;
  if (typeof b.payee !== 'string' || b.payee === '') throw new Error(`${name}: payee: want a non-empty string`);
  if (typeof b.amount !== 'number' || !(b.amount > 0)) throw new Error(`${name}: amount: want a positive number`);
  if (typeof b.due !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(b.due)) throw new Error(`${name}: due: want YYYY-MM-DD`);
  return { payee: b.payee, amount: b.amount, due: b.due };
}
