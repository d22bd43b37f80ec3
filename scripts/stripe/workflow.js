// stripe: charges orders through Stripe's API. A producer reads orders.json from the
// workspace and publishes one event per order; a consumer charges each order through
// Stripe.charge (declared in tools.yaml: a form body, as Stripe's API takes, and the
// secret key from STRIPE_SECRET_KEY) as its one mutation, and logs the charge. The
// charge carries the ledger's idempotency key; one whose answer is lost is sent again
// with the same key, and Stripe answers with the charge it made the first time.
export default {
  topics: ['orders'],

  producers: {
    orders: {
      schedule: { every: '1h' },
      publishes: ['orders'],
      async handler() {
        const file = await Files.read({ path: 'orders.json' });
        for (const order of JSON.parse(file.content)) {
          await Topics.publish({ topic: 'orders', id: order.id, payload: order });
        }
      },
    },
  },

  consumers: {
    charge: {
      subscribe: ['orders'],
      async prepare(state) {
        const evs = await Topics.peek({ topic: 'orders', limit: 1 });
        if (evs.length === 0) return { reservations: [], data: null };
        const order = evs[0].payload;
        return { reservations: [{ topic: 'orders', ids: [order.id] }], data: { order, charged: (state && state.charged) || 0 } };
      },
      async mutate(p) {
        if (!p) return;
        const o = p.order;
        await Stripe.charge({
          amount: o.amount,
          currency: o.currency,
          source: o.source,
          description: 'Order ' + o.id,
          metadata: { order: o.id, customer: o.customer },
        });
      },
      async next(p, outcome) {
        if (!p) return undefined;
        const c = outcome.status === 'applied' ? outcome.result : null;
        console.log('order ' + p.order.id + ': ' + outcome.status + (c ? ' as ' + c.object + ' ' + c.id : ''));
        return { charged: p.charged + (c ? 1 : 0), last: c ? c.id : null };
      },
    },
  },
};
