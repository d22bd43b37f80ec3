package js

import (
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/dop251/goja"
)

// Intl.DateTimeFormat: dateStyle and timeStyle use the locale's CLDR date and time
// formats as they are; component options (weekday, year, month, day, hour, minute,
// second, timeZoneName) are laid out by templates read from the locale's full, short
// and medium formats, with the fields not asked for taken out.

// probe is the instant templates are read from: every field differs from the others.
var probe = time.Date(2033, time.November, 22, 13, 44, 55, 0, time.UTC)

// A template is a list of parts: a literal, or a field ("W" weekday, "M" month name,
// "n" month number, "d" day, "y" year, "h" hour (12), "H" hour (24), "m" minute,
// "s" second, "a" day period).
type tpart struct {
	field byte
	lit   string
}

type dateTemplates struct {
	text    []tpart // from the full date: weekday, month name, day, year
	numeric []tpart // from the short date
	padDay  bool    // the short date pads day and month to two digits
	time    []tpart // from the medium time
	padHour bool
	h12     bool
	am, pm  string
	glue    string // between the date and the time
}

// scan turns s into a template, replacing each of the values by its field, longest
// first.
func scan(s string, values []struct {
	v     string
	field byte
}) []tpart {
	parts := []tpart{{lit: s}}
	for _, fv := range values {
		if fv.v == "" {
			continue
		}
		var out []tpart
		done := false
		for _, p := range parts {
			if p.field != 0 || done {
				out = append(out, p)
				continue
			}
			i := strings.Index(p.lit, fv.v)
			if i < 0 {
				out = append(out, p)
				continue
			}
			if i > 0 {
				out = append(out, tpart{lit: p.lit[:i]})
			}
			out = append(out, tpart{field: fv.field})
			if rest := p.lit[i+len(fv.v):]; rest != "" {
				out = append(out, tpart{lit: rest})
			}
			done = true
		}
		parts = out
	}
	return parts
}

type fieldValue = struct {
	v     string
	field byte
}

func newDateTemplates(l *locale) dateTemplates {
	tr := l.tr
	var t dateTemplates
	t.text = scan(tr.FmtDateFull(probe), []fieldValue{
		{tr.WeekdayWide(probe.Weekday()), 'W'}, {tr.MonthWide(probe.Month()), 'M'}, {"2033", 'y'}, {"22", 'd'}})
	t.numeric = scan(tr.FmtDateShort(probe), []fieldValue{{"2033", 'y'}, {"22", 'd'}, {"33", 'y'}, {"11", 'n'}})
	early := time.Date(2033, time.January, 2, 1, 4, 5, 0, time.UTC)
	t.padDay = strings.Contains(tr.FmtDateShort(early), "02")
	pm := tr.FmtTimeMedium(probe)
	am := tr.FmtTimeMedium(early)
	if strings.Contains(pm, "13") {
		t.time = scan(pm, []fieldValue{{"13", 'H'}, {"44", 'm'}, {"55", 's'}})
		t.padHour = strings.Contains(am, "01")
	} else {
		t.h12 = true
		t.time = scan(pm, []fieldValue{{"44", 'm'}, {"55", 's'}, {"1", 'h'}})
		// What is left of the template besides separators is the day period.
		for i, p := range t.time {
			if p.field == 0 && strings.IndexFunc(p.lit, unicode.IsLetter) >= 0 {
				t.pm = strings.TrimFunc(p.lit, notLetter)
				t.am = strings.TrimFunc(strings.Replace(strings.Replace(strings.Replace(am, "1", "", 1), "04", "", 1), "05", "", 1), notLetter)
				lit := p.lit
				k := strings.Index(lit, t.pm)
				t.time = append(t.time[:i:i], append(splitPeriod(lit[:k], lit[k+len(t.pm):]), t.time[i+1:]...)...)
				break
			}
		}
		if strings.HasPrefix(l.tag, "en") {
			// CLDR's English day periods are AM and PM; the generated tables have
			// them in lower case.
			t.am, t.pm = "AM", "PM"
		}
	}
	t.glue = ", "
	switch l.tag {
	case "ja", "zh", "ko", "fr":
		t.glue = " "
	}
	return t
}

func notLetter(r rune) bool { return !unicode.IsLetter(r) }

func splitPeriod(before, after string) []tpart {
	var out []tpart
	if before != "" {
		out = append(out, tpart{lit: before})
	}
	out = append(out, tpart{field: 'a'})
	if after != "" {
		out = append(out, tpart{lit: after})
	}
	return out
}

// keep returns tmpl without the fields want does not name. A literal holding letters
// belongs to the field before it ("年" after the year); a separator goes with the
// field it separates, the longer of the two around it when it is in the middle.
func keep(tmpl []tpart, want func(byte) bool) []tpart {
	parts := append([]tpart(nil), tmpl...)
	for i := 0; i < len(parts); i++ {
		if parts[i].field == 0 || want(parts[i].field) {
			continue
		}
		lo, hi := i, i+1
		hasLetter := func(j int) bool {
			return j >= 0 && j < len(parts) && parts[j].field == 0 && strings.IndexFunc(parts[j].lit, unicode.IsLetter) >= 0
		}
		isLit := func(j int) bool { return j >= 0 && j < len(parts) && parts[j].field == 0 }
		switch {
		case hasLetter(i + 1):
			hi = i + 2
		case i == 0 || !isLit(i-1) || hasLetter(i-1):
			if isLit(i + 1) {
				hi = i + 2
			}
		case !isLit(i + 1):
			lo = i - 1
		case len(parts[i+1].lit) > len(parts[i-1].lit):
			hi = i + 2
		default:
			lo = i - 1
		}
		parts = append(parts[:lo], parts[hi:]...)
		i = lo - 1
	}
	// Separators left at either end go.
	for len(parts) > 0 && parts[0].field == 0 && strings.IndexFunc(parts[0].lit, unicode.IsLetter) < 0 {
		parts = parts[1:]
	}
	for len(parts) > 0 && parts[len(parts)-1].field == 0 && strings.IndexFunc(parts[len(parts)-1].lit, unicode.IsLetter) < 0 {
		parts = parts[:len(parts)-1]
	}
	return parts
}

type dateFormat struct {
	loc                          *locale
	zone                         *time.Location
	zoneName                     string
	dateStyle, timeStyle         string
	weekday, year, month, day    string
	hour, minute, second, tzName string
	hour12                       bool
}

func (p *platform) newDateFormat(loc *locale, o *goja.Object, required, defaults string) *dateFormat {
	f := &dateFormat{loc: loc, hour12: loc.date.h12}
	f.zone, f.zoneName = time.UTC, "UTC"
	switch {
	case p.zone != nil:
		f.zone, f.zoneName = p.zone, p.zone.String()
	case p.det == nil:
		f.zone, f.zoneName = time.Local, time.Local.String()
	}
	if name := p.option(o, "timeZone", nil, ""); name != "" {
		z, err := time.LoadLocation(name)
		if err != nil || name == "Local" || name == "" {
			p.throwRange("Invalid time zone specified: %s", name)
		}
		f.zone, f.zoneName = z, z.String()
	}
	styles := []string{"full", "long", "medium", "short"}
	f.dateStyle = p.option(o, "dateStyle", styles, "")
	f.timeStyle = p.option(o, "timeStyle", styles, "")
	f.weekday = p.option(o, "weekday", []string{"long", "short", "narrow"}, "")
	f.year = p.option(o, "year", []string{"numeric", "2-digit"}, "")
	f.month = p.option(o, "month", []string{"numeric", "2-digit", "long", "short", "narrow"}, "")
	f.day = p.option(o, "day", []string{"numeric", "2-digit"}, "")
	f.hour = p.option(o, "hour", []string{"numeric", "2-digit"}, "")
	f.minute = p.option(o, "minute", []string{"numeric", "2-digit"}, "")
	f.second = p.option(o, "second", []string{"numeric", "2-digit"}, "")
	f.tzName = p.option(o, "timeZoneName", []string{"short", "long", "shortOffset", "longOffset"}, "")
	if v := o.Get("hour12"); v != nil && !goja.IsUndefined(v) {
		f.hour12 = v.ToBoolean()
	} else if hc := p.option(o, "hourCycle", []string{"h11", "h12", "h23", "h24"}, ""); hc != "" {
		f.hour12 = hc == "h11" || hc == "h12"
	}
	hasDate := f.weekday != "" || f.year != "" || f.month != "" || f.day != ""
	hasTime := f.hour != "" || f.minute != "" || f.second != ""
	if f.dateStyle != "" || f.timeStyle != "" {
		if hasDate || hasTime || f.tzName != "" {
			p.throwType("Can't set option %s when dateStyle or timeStyle is used", firstSet(f))
		}
		if required == "date" && f.dateStyle == "" {
			p.throwType("Invalid option : timeStyle without dateStyle in toLocaleDateString")
		}
		if required == "time" && f.timeStyle == "" {
			p.throwType("Invalid option : dateStyle without timeStyle in toLocaleTimeString")
		}
		return f
	}
	needDefaults := true
	if (required == "date" || required == "any") && hasDate {
		needDefaults = false
	}
	if (required == "time" || required == "any") && hasTime {
		needDefaults = false
	}
	if needDefaults && (defaults == "date" || defaults == "all") {
		f.year, f.month, f.day = "numeric", "numeric", "numeric"
	}
	if needDefaults && (defaults == "time" || defaults == "all") {
		f.hour, f.minute, f.second = "numeric", "numeric", "numeric"
	}
	return f
}

func firstSet(f *dateFormat) string {
	for _, kv := range [][2]string{{"weekday", f.weekday}, {"year", f.year}, {"month", f.month}, {"day", f.day},
		{"hour", f.hour}, {"minute", f.minute}, {"second", f.second}, {"timeZoneName", f.tzName}} {
		if kv[1] != "" {
			return kv[0]
		}
	}
	return "?"
}

func (f *dateFormat) resolved() map[string]any {
	r := map[string]any{"locale": f.loc.tag, "calendar": "gregory", "numberingSystem": "latn", "timeZone": f.zoneName}
	for k, v := range map[string]string{"dateStyle": f.dateStyle, "timeStyle": f.timeStyle, "weekday": f.weekday,
		"year": f.year, "month": f.month, "day": f.day, "hour": f.hour, "minute": f.minute, "second": f.second,
		"timeZoneName": f.tzName} {
		if v != "" {
			r[k] = v
		}
	}
	if f.hour != "" || f.timeStyle != "" {
		r["hour12"] = f.hour12
		r["hourCycle"] = map[bool]string{true: "h12", false: "h23"}[f.hour12]
	}
	return r
}

func (f *dateFormat) format(t time.Time) string {
	t = t.In(f.zone)
	l, tr := f.loc, f.loc.tr
	if f.dateStyle != "" || f.timeStyle != "" {
		var date, clock string
		switch f.dateStyle {
		case "full":
			date = tr.FmtDateFull(t)
		case "long":
			date = tr.FmtDateLong(t)
		case "medium":
			date = tr.FmtDateMedium(t)
		case "short":
			date = tr.FmtDateShort(t)
		}
		if f.timeStyle != "" {
			opt := &dateFormat{loc: l, hour: "numeric", minute: "2-digit", hour12: f.hour12}
			if f.timeStyle != "short" {
				opt.second = "2-digit"
			}
			if f.timeStyle == "full" || f.timeStyle == "long" {
				opt.tzName = "short"
			}
			clock = opt.formatTime(t)
		}
		return join(date, clock, l.date.glue)
	}
	var date string
	if f.weekday != "" || f.year != "" || f.month != "" || f.day != "" {
		date = f.formatDate(t)
	}
	var clock string
	if f.hour != "" || f.minute != "" || f.second != "" {
		clock = f.formatTime(t)
	} else if f.tzName != "" {
		date += " " + zoneLabel(t, f.tzName)
	}
	return join(date, clock, l.date.glue)
}

func join(a, b, glue string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + glue + b
}

func (f *dateFormat) formatDate(t time.Time) string {
	l, tr := f.loc, f.loc.tr
	textual := f.month == "long" || f.month == "short" || f.month == "narrow"
	want := func(c byte) bool {
		switch c {
		case 'W':
			return f.weekday != ""
		case 'M', 'n':
			return f.month != ""
		case 'd':
			return f.day != ""
		case 'y':
			return f.year != ""
		}
		return false
	}
	tmpl := l.date.numeric
	if textual {
		tmpl = l.date.text
	}
	var b strings.Builder
	if !textual && f.weekday != "" {
		b.WriteString(weekdayName(f, t))
		if f.year != "" || f.month != "" || f.day != "" {
			b.WriteString(", ")
		}
	}
	for _, p := range keep(tmpl, want) {
		switch p.field {
		case 0:
			b.WriteString(p.lit)
		case 'W':
			b.WriteString(weekdayName(f, t))
		case 'M':
			switch f.month {
			case "long":
				b.WriteString(tr.MonthWide(t.Month()))
			case "short":
				b.WriteString(tr.MonthAbbreviated(t.Month()))
			default:
				b.WriteString(tr.MonthNarrow(t.Month()))
			}
		case 'n':
			b.WriteString(pad(int(t.Month()), f.month == "2-digit" || l.date.padDay))
		case 'd':
			b.WriteString(pad(t.Day(), f.day == "2-digit" || !textual && l.date.padDay))
		case 'y':
			if f.year == "2-digit" {
				b.WriteString(pad(t.Year()%100, true))
			} else {
				b.WriteString(strconv.Itoa(t.Year()))
			}
		}
	}
	return b.String()
}

func weekdayName(f *dateFormat, t time.Time) string {
	switch f.weekday {
	case "long":
		return f.loc.tr.WeekdayWide(t.Weekday())
	case "short":
		return f.loc.tr.WeekdayAbbreviated(t.Weekday())
	}
	return f.loc.tr.WeekdayNarrow(t.Weekday())
}

func (f *dateFormat) formatTime(t time.Time) string {
	l := f.loc
	tmpl := l.date.time
	h12 := f.hour12
	if h12 != l.date.h12 {
		// The locale's own layout is for the other cycle: fall back to the plain one.
		if h12 {
			tmpl = []tpart{{field: 'h'}, {lit: ":"}, {field: 'm'}, {lit: ":"}, {field: 's'}, {lit: " "}, {field: 'a'}}
		} else {
			tmpl = []tpart{{field: 'H'}, {lit: ":"}, {field: 'm'}, {lit: ":"}, {field: 's'}}
		}
	}
	am, pm := l.date.am, l.date.pm
	if am == "" {
		am, pm = "AM", "PM"
	}
	want := func(c byte) bool {
		switch c {
		case 'h', 'H', 'a':
			return f.hour != ""
		case 'm':
			return f.minute != ""
		case 's':
			return f.second != ""
		}
		return false
	}
	var b strings.Builder
	for _, p := range keep(tmpl, want) {
		switch p.field {
		case 0:
			b.WriteString(p.lit)
		case 'H':
			b.WriteString(pad(t.Hour(), f.hour == "2-digit" || l.date.padHour || f.minute != ""))
		case 'h':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b.WriteString(pad(h, f.hour == "2-digit"))
		case 'm':
			b.WriteString(pad(t.Minute(), true))
		case 's':
			b.WriteString(pad(t.Second(), true))
		case 'a':
			if t.Hour() < 12 {
				b.WriteString(am)
			} else {
				b.WriteString(pm)
			}
		}
	}
	if f.tzName != "" {
		b.WriteString(" " + zoneLabel(t, f.tzName))
	}
	return b.String()
}

// zoneLabel names t's zone: the abbreviation, or, where the zone database has none,
// GMT with the offset.
func zoneLabel(t time.Time, style string) string {
	name, off := t.Zone()
	if style == "short" && name != "" && (name[0] < '0' || name[0] > '9') && name[0] != '+' && name[0] != '-' {
		return name
	}
	if off == 0 {
		return "GMT"
	}
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	s := "GMT" + sign + strconv.Itoa(off/3600)
	if m := off % 3600 / 60; m != 0 {
		s += ":" + pad(m, true)
	}
	return s
}

func pad(n int, two bool) string {
	if two && n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}
