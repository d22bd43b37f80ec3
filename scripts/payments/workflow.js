// payments: a producer reads invoices.json from the workspace and publishes one event per
// unpaid invoice; a consumer charges each invoice through the HTTP tool Payments.charge
// (declared in tools.json, its API key read from PAYMENTS_API_KEY) as its one mutation,
// then publishes a receipt, which a second consumer logs. The charge carries the ledger's idempotency key, and a charge
// whose answer is lost is looked up with the declared reconcile request instead of being
// sent again. Running it again charges nothing twice: event ids are invoice ids.
export default {
  topics: ['invoices', 'receipts'],

  producers: {
    invoices: {
      schedule: { every: '1h' },
      publishes: ['invoices'],
      async handler() {
        const file = await Files.read({ path: 'invoices.json' });
        for (const inv of JSON.parse(file.content)) {
          if (inv.paid) continue;
          await Topics.publish({ topic: 'invoices', id: inv.id, payload: inv });
        }
      },
    },
  },

  consumers: {
    pay: {
      subscribe: ['invoices'],
      publishes: ['receipts'],
      async prepare(state) {
        const evs = await Topics.peek({ topic: 'invoices', limit: 1 });
        if (evs.length === 0) return { reservations: [], data: null };
        const inv = evs[0].payload;
        return {
          reservations: [{ topic: 'invoices', ids: [inv.id] }],
          data: { invoice: inv, paid: (state && state.paid) || 0, cents: (state && state.cents) || 0 },
        };
      },
      async mutate(p) {
        if (!p) return;
        const inv = p.invoice;
        await Payments.charge({ invoice: inv.id, customer: inv.customer, amount: inv.amount, currency: inv.currency });
      },
      async next(p, outcome) {
        if (!p) return undefined;
        const inv = p.invoice;
        const charge = outcome.status === 'applied' && outcome.result ? outcome.result.id : null;
        await Topics.publish({ topic: 'receipts', id: inv.id, payload: { invoice: inv.id, status: outcome.status, charge } });
        console.log('invoice ' + inv.id + ': ' + outcome.status + (charge ? ' as ' + charge : ''));
        const paid = outcome.status === 'applied';
        return { paid: p.paid + (paid ? 1 : 0), cents: p.cents + (paid ? inv.amount : 0) };
      },
    },
    // Receipts are only logged here; a real workflow would mail them.
    receipts: {
      subscribe: ['receipts'],
      async prepare() {
        const evs = await Topics.peek({ topic: 'receipts', limit: 100 });
        return { reservations: evs.length ? [{ topic: 'receipts', ids: evs.map((e) => e.id) }] : [], data: evs.map((e) => e.payload) };
      },
      async next(receipts) {
        for (const r of receipts || []) console.log('receipt for ' + r.invoice + ': ' + r.status);
      },
    },
  },
};
