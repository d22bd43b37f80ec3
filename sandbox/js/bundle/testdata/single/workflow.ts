// The project of ../project written as one file, for the benchmarks.
const table = { eur: 2 };
const rates = { eur: table.eur };

function total(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) * rates.eur;
}

function fail(): never {
  throw new Error('no money');
}

function greet(name: string): string {
  return 'hello ' + name;
}

function upper(s: string): string {
  return s.toUpperCase();
}

const legacy = { shout(s: string): string { return upper(s) + '!'; } };

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
