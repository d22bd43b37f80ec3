import { total, fail } from './lib/money';
import { rates } from '@lib/rates';
import { greet } from 'greet';
import legacy from 'legacy';

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
