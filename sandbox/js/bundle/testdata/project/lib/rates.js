import table from './rates.json';

export const rates = { eur: table.eur };
