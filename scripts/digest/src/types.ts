// The shapes the digest handlers pass between phases.

/** A bill as written in inbox/NAME.json. */
export interface Bill {
  payee: string;
  amount: number;
  due: string; // YYYY-MM-DD
}

/** What prepare hands to mutate and next. */
export interface Prepared {
  name: string;
  markdown: string;
  digested: number;
}
