package js_test

import (
	"testing"
	"time"

	"github.com/scripthost/scripthost/sandbox"
)

// TestIntlNumberFormat: ECMA-402 number formatting for common locales, currencies
// and options.
func TestIntlNumberFormat(t *testing.T) {
	runCases(t, nil, []jsCase{
		{"toLocaleString", `return [(1234.5).toLocaleString('en-US'), (1234.5).toLocaleString(), (1234567.891).toLocaleString('de-DE'), (1234.5).toLocaleString('fr-FR'),
			(0).toLocaleString(), (-0.5).toLocaleString('en'), (1e21).toLocaleString('en-US'), NaN.toLocaleString(), (-Infinity).toLocaleString(), [1000, 2.5].toLocaleString('en-US')]`,
			`["1,234.5","1,234.5","1.234.567,891","1\u202f234,5","0","-0.5","1,000,000,000,000,000,000,000","NaN","-∞","1,000,2.5"]`},
		{"options", `const f = (o, n, l = 'en-US') => new Intl.NumberFormat(l, o).format(n);
			return [f({ maximumFractionDigits: 0 }, 1234.5), f({ minimumFractionDigits: 2 }, 1234.5), f({ useGrouping: false }, 1234.5),
				f({ minimumIntegerDigits: 3 }, 7), f({ style: 'percent' }, 0.256), f({ style: 'percent', maximumFractionDigits: 1 }, 0.2567),
				f({ style: 'percent' }, 0.5, 'de'), f({}, 0.1 + 0.2), f({ maximumFractionDigits: 2 }, 1.005), f({}, 123456789)]`,
			`["1,235","1,234.50","1234.5","007","26%","25.7%","50\u00a0%","0.3","1.01","123,456,789"]`},
		{"currency", `const c = (l, cur, n, o = {}) => new Intl.NumberFormat(l, { style: 'currency', currency: cur, ...o }).format(n);
			return [c('en-US', 'USD', 1234.5), c('en-US', 'USD', -1234.5), c('en-US', 'JPY', 1234.5), c('en-US', 'EUR', 1), c('de-DE', 'EUR', 1234.5),
				c('en-GB', 'GBP', 3.5), c('en-US', 'USD', 3.5, { currencyDisplay: 'code' }), c('fr-FR', 'EUR', 1234.5), c('ja-JP', 'JPY', 1234), c('en-US', 'usd', 2)]`,
			`["$1,234.50","-$1,234.50","¥1,235","€1.00","1.234,50\u00a0€","£3.50","USD\u00a03.50","1\u202f234,50\u00a0€","￥1,234","$2.00"]`},
		{"resolved options and locales", `const r = new Intl.NumberFormat('de-AT', { style: 'currency', currency: 'EUR' }).resolvedOptions();
			return [r.locale, r.currency, r.minimumFractionDigits, new Intl.NumberFormat('xx').resolvedOptions().locale, new Intl.NumberFormat().resolvedOptions().locale,
				Intl.NumberFormat('en').format(1), Intl.NumberFormat.supportedLocalesOf(['de-CH', 'tlh']), Intl.getCanonicalLocales(['EN-us', 'en-US', 'de'])]`,
			`["de","EUR",2,"en-US","en-US","1",["de-CH"],["en-US","de"]]`},
		{"errors", `const out = [];
			for (const [l, o] of [['en', { style: 'currency' }], ['en', { style: 'currency', currency: 'DOLLARS' }], ['en', { style: 'bogus' }], ['not a locale!', {}], ['en', { maximumFractionDigits: 101 }], ['en', { notation: 'compact' }], ['en', { minimumFractionDigits: 3, maximumFractionDigits: 1 }]]) {
				try { new Intl.NumberFormat(l, o); out.push('made') } catch (e) { out.push(e.name) }
			}
			return out`, `["TypeError","RangeError","RangeError","RangeError","RangeError","RangeError","RangeError"]`},
	})
}

// TestIntlDateTimeFormat: ECMA-402 date formatting: styles, components, time zones,
// hour cycles and toLocale*String.
func TestIntlDateTimeFormat(t *testing.T) {
	const d = `const d = new Date(Date.UTC(2026, 0, 15, 15, 4, 5));
const f = (l, o) => new Intl.DateTimeFormat(l, { timeZone: 'UTC', ...o }).format(d);
`
	runCases(t, nil, []jsCase{
		{"en-US", d + `return [f('en-US'), f('en-US', { dateStyle: 'full' }), f('en-US', { dateStyle: 'long' }), f('en-US', { dateStyle: 'medium' }), f('en-US', { dateStyle: 'short' }),
			f('en-US', { timeStyle: 'short' }), f('en-US', { timeStyle: 'medium' }), f('en-US', { dateStyle: 'medium', timeStyle: 'short' }),
			f('en-US', { month: 'long', year: 'numeric' }), f('en-US', { weekday: 'short', month: 'short', day: 'numeric' }), f('en-US', { weekday: 'long' }),
			f('en-US', { hour: '2-digit', minute: '2-digit', hour12: false }), f('en-US', { hour: 'numeric', minute: '2-digit' }), f('en-US', { year: '2-digit', month: '2-digit', day: '2-digit' }),
			f('en-US', { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' })]`,
			`["1/15/2026","Thursday, January 15, 2026","January 15, 2026","Jan 15, 2026","1/15/26","3:04 PM","3:04:05 PM","Jan 15, 2026, 3:04 PM","January 2026","Thu, Jan 15","Thursday","15:04","3:04 PM","01/15/26","Jan 15, 3:04 PM"]`},
		{"other locales", d + `return [f('en-GB'), f('en-GB', { dateStyle: 'long' }), f('de-DE', { dateStyle: 'long' }), f('de', { dateStyle: 'full' }), f('de', { month: 'long', year: 'numeric' }),
			f('fr-FR', { dateStyle: 'full' }), f('es', { dateStyle: 'long' }), f('ja-JP', { year: 'numeric', month: 'long', day: 'numeric' }), f('ja', { dateStyle: 'long' }),
			f('de', { timeStyle: 'short' }), f('en-GB', { timeStyle: 'medium' })]`,
			`["15/01/2026","15 January 2026","15. Januar 2026","Donnerstag, 15. Januar 2026","Januar 2026","jeudi 15 janvier 2026","15 de enero de 2026","2026年1月15日","2026年1月15日","15:04","15:04:05"]`},
		{"time zones", d + `return [f('en-US', { timeZone: 'America/New_York', timeStyle: 'short' }), f('en-US', { timeZone: 'Asia/Kolkata', hour: 'numeric', minute: '2-digit' }),
			f('en-US', { timeZone: 'Europe/Berlin', dateStyle: 'short', timeStyle: 'long' }), f('en-US', { timeZone: 'Pacific/Kiritimati' }),
			new Intl.DateTimeFormat('en-US', { timeZone: 'Asia/Tokyo' }).resolvedOptions().timeZone]`,
			`["10:04 AM","8:34 PM","1/15/26, 4:04:05 PM CET","1/16/2026","Asia/Tokyo"]`},
		{"toLocale*String", d + `return [d.toLocaleString('en-US', { timeZone: 'UTC' }), d.toLocaleDateString('en-US', { timeZone: 'UTC' }), d.toLocaleTimeString('en-US', { timeZone: 'UTC' }),
			d.toLocaleDateString('de-DE', { timeZone: 'UTC', weekday: 'long', year: 'numeric', month: 'long', day: 'numeric' }), new Date(NaN).toLocaleString(),
			d.toLocaleTimeString('en-US', { timeZone: 'UTC', hour: '2-digit', minute: '2-digit' })]`,
			`["1/15/2026, 3:04:05 PM","1/15/2026","3:04:05 PM","Donnerstag, 15. Januar 2026","Invalid Date","03:04 PM"]`},
		{"errors", d + `const out = [];
			for (const o of [{ timeZone: 'Mars/Olympus' }, { dateStyle: 'huge' }, { month: 'tiny' }, { dateStyle: 'short', year: 'numeric' }]) {
				try { new Intl.DateTimeFormat('en', o); out.push('made') } catch (e) { out.push(e.name) }
			}
			try { new Intl.DateTimeFormat('en').format(new Date(NaN)) } catch (e) { out.push(e.name) }
			return out`, `["RangeError","RangeError","RangeError","TypeError","RangeError"]`},
	})
}

// TestDeterministicZone: in deterministic mode a date-time string without a zone is
// read in the fixture's time zone, and Intl defaults to that zone and to en-US.
func TestDeterministicZone(t *testing.T) {
	det := &sandbox.Determinism{Now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), TimeZone: "Europe/Berlin"}
	runCases(t, det, []jsCase{
		{"Date.parse", `return [Date.parse('2026-03-01T10:00:00') === Date.UTC(2026, 2, 1, 9), Date.parse('2026-07-01T10:00:00') === Date.UTC(2026, 6, 1, 8),
			Date.parse('2026-03-01') === Date.UTC(2026, 2, 1), Date.parse('2026-03-01T10:00:00Z') === Date.UTC(2026, 2, 1, 10),
			Date.parse('2026-03-01T10:00:00+05:00') === Date.UTC(2026, 2, 1, 5), Date.parse('March 1, 2026 10:00:00') === Date.UTC(2026, 2, 1, 9),
			Date.parse('Sun, 01 Mar 2026 10:00:00 GMT') === Date.UTC(2026, 2, 1, 10),
			new Date('2026-03-01T10:00:00').getHours(), new Date('2026-03-01T10:00:00').toISOString(), isNaN(Date.parse('garbage')), new Date('2026-03-01T10:00:00') instanceof Date]`,
			`[true,true,true,true,true,true,true,10,"2026-03-01T09:00:00.000Z",true,true]`},
		{"Intl defaults", `const r = new Intl.DateTimeFormat().resolvedOptions();
			return [r.timeZone, r.locale, new Date().toLocaleString(), new Date().toLocaleTimeString('en-GB')]`,
			`["Europe/Berlin","en-US","3/1/2026, 1:00:00 PM","13:00:00"]`},
	})
}
