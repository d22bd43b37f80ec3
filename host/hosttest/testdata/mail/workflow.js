// mail: for each signup event, look the person up in the embedder's directory
// (Directory.lookup, read-only) and send one welcome mail (Mail.send, a mutation).
export default {
  topics: ['signups'],
  consumers: {
    welcome: {
      subscribe: ['signups'],
      async prepare(state) {
        const evs = await Topics.peek({ topic: 'signups', limit: 1 });
        if (evs.length === 0) return { reservations: [], data: null };
        const who = await Directory.lookup({ user: evs[0].payload.user });
        return { reservations: [{ topic: 'signups', ids: [evs[0].id] }], data: { to: who.email, sent: ((state && state.sent) || 0) + 1 } };
      },
      async mutate(d) {
        if (d) await Mail.send({ to: d.to, subject: 'Welcome!' });
      },
      async next(d, result) {
        if (!d) return undefined;
        console.log('welcomed ' + d.to + ': ' + result.status);
        return { sent: d.sent };
      },
    },
  },
};
