// charges: a producer publishes the charges listed in its schedule's first run; a
// consumer charges each one through the HTTP tool Charges.create (one mutation per
// run) and remembers the last outcome and how many charges it has seen.
//
// The end-to-end tests run it through the CLI against a fake payment service. Each
// event's payload is {amount}; the event id names the charge.
const COUNT = 1;

export default {
  topics: ['charges'],

  producers: {
    seed: {
      schedule: { every: '1h' },
      publishes: ['charges'],
      async handler(state) {
        if (state && state.seeded) return undefined;
        for (let i = 1; i <= COUNT; i++) {
          await Topics.publish({ topic: 'charges', id: 'ch-' + i, payload: { amount: 100 * i } });
        }
        return { seeded: COUNT };
      },
    },
  },

  consumers: {
    charge: {
      subscribe: ['charges'],
      async prepare(state) {
        const evs = await Topics.peek({ topic: 'charges', limit: 1 });
        if (evs.length === 0) return { reservations: [], data: null };
        const ev = evs[0];
        return {
          reservations: [{ topic: 'charges', ids: [ev.id] }],
          data: { id: ev.id, amount: ev.payload.amount, seen: ((state && state.seen) || 0) + 1 },
        };
      },
      async mutate(p) {
        if (!p) return;
        await Charges.create({ charge: p.id, amount: p.amount });
      },
      async next(p, outcome) {
        if (!p) return undefined;
        console.log('charge ' + p.id + ': ' + JSON.stringify(outcome));
        return { seen: p.seen, last: p.id, status: outcome.status, result: outcome.result === undefined ? null : outcome.result };
      },
    },
  },
};
