package js

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/dop251/goja"
	"github.com/go-playground/locales"
	lc "github.com/go-playground/locales/currency"
	"github.com/go-playground/locales/de"
	"github.com/go-playground/locales/en"
	"github.com/go-playground/locales/en_AU"
	"github.com/go-playground/locales/en_CA"
	"github.com/go-playground/locales/en_GB"
	"github.com/go-playground/locales/en_IN"
	"github.com/go-playground/locales/en_US"
	"github.com/go-playground/locales/es"
	"github.com/go-playground/locales/fr"
	"github.com/go-playground/locales/it"
	"github.com/go-playground/locales/ja"
	"github.com/go-playground/locales/ko"
	"github.com/go-playground/locales/nl"
	"github.com/go-playground/locales/pl"
	"github.com/go-playground/locales/pt"
	"github.com/go-playground/locales/pt_BR"
	"github.com/go-playground/locales/ru"
	"github.com/go-playground/locales/sv"
	"github.com/go-playground/locales/tr"
	"github.com/go-playground/locales/zh"
	"golang.org/x/text/currency"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Intl: locale negotiation, currency codes, currency symbols and currency digits come
// from golang.org/x/text (CLDR); the locale's separators, percent and currency
// patterns, month and weekday names and date and time patterns from
// github.com/go-playground/locales (CLDR, generated per locale). Patterns are read by
// formatting a probe value and turning its fields back into placeholders, so each
// locale needs no table of its own here. The default locale is en-US, whatever the
// process's environment says.

// intlLocales are the supported locales, the default first.
var intlLocales = []struct {
	tag string
	new func() locales.Translator
}{
	{"en-US", en_US.New}, {"en", en.New}, {"en-GB", en_GB.New}, {"en-CA", en_CA.New}, {"en-AU", en_AU.New},
	{"en-IN", en_IN.New}, {"de", de.New}, {"fr", fr.New}, {"es", es.New}, {"it", it.New}, {"pt", pt.New},
	{"pt-BR", pt_BR.New}, {"nl", nl.New}, {"sv", sv.New}, {"pl", pl.New}, {"ru", ru.New}, {"tr", tr.New},
	{"ja", ja.New}, {"zh", zh.New}, {"ko", ko.New},
}

// locale is one supported locale with its patterns, read once.
type locale struct {
	tag   string
	lang  language.Tag
	tr    locales.Translator
	group string
	dec   string
	minus string
	// percent and currency patterns: text before and after the number.
	pctPre, pctPost string
	curPre, curPost string // with the USD symbol of the probe in usdSym's place
	usdSym          string
	date            dateTemplates
}

var (
	intlOnce    sync.Once
	intlByTag   []*locale
	intlMatcher language.Matcher
)

func intlInit() {
	intlOnce.Do(func() {
		tags := make([]language.Tag, len(intlLocales))
		for i, l := range intlLocales {
			tags[i] = language.MustParse(l.tag)
			intlByTag = append(intlByTag, newLocale(l.tag, tags[i], l.new()))
		}
		intlMatcher = language.NewMatcher(tags)
	})
}

func newLocale(tag string, lang language.Tag, tr locales.Translator) *locale {
	l := &locale{tag: tag, lang: lang, tr: tr}
	// "1,234.5" gives the group and decimal separators; "-1" the minus sign.
	n := tr.FmtNumber(1234.5, 1)
	i, j := strings.Index(n, "1"), strings.Index(n, "234")
	l.group = n[i+1 : j]
	l.dec = n[j+3 : strings.LastIndex(n, "5")]
	l.minus = strings.TrimSuffix(tr.FmtNumber(-1, 0), "1")
	p := tr.FmtPercent(5, 0)
	k := strings.Index(p, "5")
	l.pctPre, l.pctPost = p[:k], p[k+1:]
	c := tr.FmtCurrency(5, 2, lc.USD)
	num := "5" + l.dec + "00"
	k = strings.Index(c, num)
	l.curPre, l.curPost = c[:k], c[k+len(num):]
	l.usdSym = strings.TrimFunc(l.curPre+l.curPost, func(r rune) bool { return unicode.IsSpace(r) || r == '\u00a0' })
	l.date = newDateTemplates(l)
	return l
}

// resolveLocale picks the supported locale for the requested list (BCP 47 tags), or
// throws a RangeError for a malformed tag.
func (p *platform) resolveLocale(requested []string) *locale {
	intlInit()
	if len(requested) == 0 {
		return intlByTag[0]
	}
	tags := make([]language.Tag, 0, len(requested))
	for _, r := range requested {
		t, ok := parseLocale(r)
		if !ok {
			p.throwRange("Incorrect locale information provided: %q", r)
		}
		tags = append(tags, t)
	}
	for _, t := range tags {
		if l := matchLocale(t); l != nil {
			return l
		}
	}
	return intlByTag[0]
}

// matchLocale returns the supported locale for t, nil when none speaks its language.
func matchLocale(t language.Tag) *locale {
	_, idx, conf := intlMatcher.Match(t)
	if conf == language.No {
		return nil
	}
	l := intlByTag[idx]
	want, _ := t.Base()
	got, _ := l.lang.Base()
	if want != got {
		return nil
	}
	return l
}

func (p *platform) installIntl(set func(string, any)) {
	vm := p.in.vm
	set("canonicalLocales", func(requested []string) []string {
		out := []string{}
		seen := map[string]bool{}
		for _, r := range requested {
			t, ok := parseLocale(r)
			if !ok {
				p.throwRange("Incorrect locale information provided: %q", r)
			}
			s := t.String()
			if s == "und" {
				s = strings.ToLower(r)
			}
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		return out
	})
	set("supportedLocales", func(requested []string) []string {
		intlInit()
		out := []string{}
		for _, r := range requested {
			t, ok := parseLocale(r)
			if !ok {
				p.throwRange("Incorrect locale information provided: %q", r)
			}
			if matchLocale(t) != nil {
				out = append(out, t.String())
			}
		}
		return out
	})
	set("numberFormat", func(requested []string, opts *goja.Object) []any {
		f := p.newNumberFormat(p.resolveLocale(requested), opts)
		format := func(call goja.FunctionCall) goja.Value {
			return vm.ToValue(f.format(call.Argument(0).ToFloat()))
		}
		return []any{format, f.resolved()}
	})
	set("dateFormat", func(requested []string, opts *goja.Object, required, defaults string) []any {
		f := p.newDateFormat(p.resolveLocale(requested), opts, required, defaults)
		format := func(ms float64) string { return f.format(time.UnixMilli(int64(ms))) }
		return []any{format, f.resolved()}
	})
}

// option reads a string option, checking it against allowed (nil allows any); absent
// gives dflt.
func (p *platform) option(o *goja.Object, name string, allowed []string, dflt string) string {
	v := o.Get(name)
	if v == nil || goja.IsUndefined(v) {
		return dflt
	}
	s := v.String()
	if allowed != nil {
		ok := false
		for _, a := range allowed {
			ok = ok || a == s
		}
		if !ok {
			p.throwRange("Value %s out of range for option %s (allowed: %s)", s, name, strings.Join(allowed, ", "))
		}
	}
	return s
}

// intOption reads an integer option in [lo, hi].
func (p *platform) intOption(o *goja.Object, name string, lo, hi, dflt int) int {
	v := o.Get(name)
	if v == nil || goja.IsUndefined(v) {
		return dflt
	}
	f := v.ToFloat()
	if math.IsNaN(f) || f < float64(lo) || f > float64(hi) {
		p.throwRange("%s value is out of range (%d to %d)", name, lo, hi)
	}
	return int(math.Floor(f))
}

type numberFormat struct {
	loc                  *locale
	style                string
	currency             string
	display              string
	symbol               string
	minInt, minFD, maxFD int
	grouping             bool
}

func (p *platform) newNumberFormat(loc *locale, o *goja.Object) *numberFormat {
	f := &numberFormat{loc: loc, grouping: true}
	if v := o.Get("notation"); v != nil && !goja.IsUndefined(v) && v.String() != "standard" {
		p.throwRange("Intl.NumberFormat: notation %q is not supported (only standard)", v.String())
	}
	for _, name := range []string{"minimumSignificantDigits", "maximumSignificantDigits"} {
		if v := o.Get(name); v != nil && !goja.IsUndefined(v) {
			p.throwRange("Intl.NumberFormat: %s is not supported (use minimumFractionDigits and maximumFractionDigits)", name)
		}
	}
	f.style = p.option(o, "style", []string{"decimal", "percent", "currency", "unit"}, "decimal")
	if f.style == "unit" {
		p.throwRange("Intl.NumberFormat: style unit is not supported")
	}
	minFD, maxFD := 0, 3
	if f.style == "percent" {
		maxFD = 0
	}
	if f.style == "currency" {
		code := p.option(o, "currency", nil, "")
		if code == "" {
			p.throwType("Currency code is required with currency style.")
		}
		unit, err := currency.ParseISO(code)
		if err != nil {
			p.throwRange("Invalid currency code : %s", code)
		}
		f.currency = unit.String()
		f.display = p.option(o, "currencyDisplay", []string{"symbol", "narrowSymbol", "code", "name"}, "symbol")
		scale, _ := currency.Standard.Rounding(unit)
		minFD, maxFD = scale, scale
		pr := message.NewPrinter(loc.lang)
		switch f.display {
		case "symbol":
			f.symbol = symbolOf(pr.Sprint(currency.Symbol(unit.Amount(0))))
		case "narrowSymbol":
			f.symbol = symbolOf(pr.Sprint(currency.NarrowSymbol(unit.Amount(0))))
		default:
			f.symbol = f.currency
		}
	} else if v := o.Get("currency"); v != nil && !goja.IsUndefined(v) {
		if _, err := currency.ParseISO(v.String()); err != nil {
			p.throwRange("Invalid currency code : %s", v.String())
		}
	}
	f.minInt = p.intOption(o, "minimumIntegerDigits", 1, 21, 1)
	f.minFD = p.intOption(o, "minimumFractionDigits", 0, 100, minFD)
	dmax := max(maxFD, f.minFD)
	f.maxFD = p.intOption(o, "maximumFractionDigits", 0, 100, dmax)
	if f.minFD > f.maxFD {
		if v := o.Get("minimumFractionDigits"); v != nil && !goja.IsUndefined(v) {
			p.throwRange("maximumFractionDigits value is out of range")
		}
		f.minFD = f.maxFD
	}
	if v := o.Get("useGrouping"); v != nil && !goja.IsUndefined(v) {
		f.grouping = v.ToBoolean() || v.String() == "always" || v.String() == "auto"
	}
	return f
}

// symbolOf takes the symbol out of x/text's "<symbol> <amount>".
func symbolOf(s string) string {
	sym, _, _ := strings.Cut(s, " ")
	return sym
}

func (f *numberFormat) resolved() map[string]any {
	r := map[string]any{
		"locale": f.loc.tag, "numberingSystem": "latn", "style": f.style,
		"minimumIntegerDigits": f.minInt, "minimumFractionDigits": f.minFD, "maximumFractionDigits": f.maxFD,
		"useGrouping": f.grouping, "notation": "standard", "signDisplay": "auto",
	}
	if f.style == "currency" {
		r["currency"], r["currencyDisplay"] = f.currency, f.display
	}
	return r
}

func (f *numberFormat) format(x float64) string {
	l := f.loc
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 0):
		if x < 0 {
			return l.minus + "∞"
		}
		return "∞"
	}
	if f.style == "percent" {
		x *= 100
	}
	neg := math.Signbit(x) && x != 0
	intPart, frac := roundDecimal(math.Abs(x), f.maxFD)
	for len(frac) < f.minFD {
		frac += "0"
	}
	for len(frac) > f.minFD && strings.HasSuffix(frac, "0") {
		frac = frac[:len(frac)-1]
	}
	if neg && strings.Trim(intPart+frac, "0") == "" {
		neg = false // -0.0001 rounded to 0 shows as -0 in ECMA-402; keep it simple: 0
	}
	for len(intPart) < f.minInt {
		intPart = "0" + intPart
	}
	var b strings.Builder
	if f.grouping && len(intPart) > 3 {
		first := len(intPart) % 3
		if first > 0 {
			b.WriteString(intPart[:first])
		}
		for i := first; i < len(intPart); i += 3 {
			if i > 0 {
				b.WriteString(l.group)
			}
			b.WriteString(intPart[i : i+3])
		}
	} else {
		b.WriteString(intPart)
	}
	if frac != "" {
		b.WriteString(l.dec)
		b.WriteString(frac)
	}
	num := b.String()
	sign := ""
	if neg {
		sign = l.minus
	}
	switch f.style {
	case "percent":
		return sign + l.pctPre + num + l.pctPost
	case "currency":
		pre, post := l.curPre, l.curPost
		sym := f.symbol
		if f.display == "code" || f.display == "name" {
			// A code reads as a word: keep it apart from the number.
			if strings.Contains(pre, l.usdSym) && !strings.HasSuffix(pre, "\u00a0") {
				sym += "\u00a0"
			}
		}
		pre = strings.Replace(pre, l.usdSym, sym, 1)
		post = strings.Replace(post, l.usdSym, sym, 1)
		return sign + pre + num + post
	}
	return sign + num
}

// roundDecimal rounds x, read as its shortest decimal form (as ECMA-402 engines do),
// to digits fraction digits, halves away from zero, and returns the integer and
// fraction digits.
func roundDecimal(x float64, digits int) (string, string) {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	if len(frac) <= digits {
		return intPart, frac
	}
	up := frac[digits] >= '5'
	b := []byte(intPart + frac[:digits])
	if up {
		i := len(b) - 1
		for ; i >= 0; i-- {
			if b[i] == '9' {
				b[i] = '0'
				continue
			}
			b[i]++
			break
		}
		if i < 0 {
			b = append([]byte{'1'}, b...)
		}
	}
	n := len(b) - digits
	return string(b[:n]), string(b[n:])
}

// parseLocale parses a BCP 47 tag. A well-formed tag x/text does not know (a
// language it has no data for) is accepted, as ECMA-402 requires.
func parseLocale(s string) (language.Tag, bool) {
	t, err := language.Parse(s)
	if err == nil {
		return t, true
	}
	var ve interface{ Subtag() string }
	if errors.As(err, &ve) {
		return t, true
	}
	return t, false
}
