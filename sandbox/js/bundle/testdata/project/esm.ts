import { total, fail } from './lib/money';
import { rates } from '@lib/rates';
import { greet } from 'greet';
// legacy's code, written here: the same program as workflow.ts without a CommonJS package.
const legacy = { shout: (s: string): string => s.toUpperCase() + '!' };

export default {
  topics: ['orders'],
  consumers: {
    price: {
      subscribe: ['orders'],
      prepare(state: { n?: number } | null): { data: unknown } {
        return { data: { total: total([1, 2, 3]), rate: rates.eur, hello: greet('ada'), legacy: legacy.shout('hi'), n: (state && state.n) || 0 } };
      },
      next(data: { n: number }): { n: number } {
        console.log('priced', data.n);
        return { n: data.n + 1 };
      },
    },
  },
  fail: { money: fail },
};
