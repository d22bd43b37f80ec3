import { differenceInCalendarDays, format, parseISO } from 'date-fns';
import settings from '../settings.json';
import type { Bill } from './types';

// render writes one bill as a Markdown line, saying how soon it is due.
export function render(bill: Bill, now: Date): string {
  const due = parseISO(bill.due);
  const days = differenceInCalendarDays(due, now);
  const when =
    days < 0 ? `overdue by ${-days} day${days === -1 ? '' : 's'}` :
    days === 0 ? 'due today' :
    days <= settings.soonDays ? `due in ${days} day${days === 1 ? '' : 's'}` :
    'due later';
  const amount = `${bill.amount.toFixed(2)} ${settings.currency}`;
  return `- **${bill.payee}**: ${amount}, ${format(due, settings.dateFormat)} (${when})\n`;
}
