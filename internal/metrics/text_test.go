package metrics_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// This file is a strict reader of the text exposition format 0.0.4, as
// its specification words it, written apart from the writer so that the
// tests read what a scraper would.

type textFamily struct {
	name, help, typ string
	hasHelp         bool
	samples         []textSample
}

type textSample struct {
	name   string // with its suffix (_bucket, _sum, _count)
	labels []label
	value  float64
}

type label struct{ name, value string }

// readText parses text and checks the format's rules: every sample follows
// its family's TYPE line, a family's lines are contiguous, HELP and TYPE
// come once each, before the samples; no two samples are the same series;
// a histogram's buckets are cumulative, increase in le, end in +Inf equal
// to _count and come with a _sum; families are sorted by name.
func readText(text string) ([]textFamily, error) {
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("the text does not end in a line feed")
	}
	var fams []textFamily
	byName := map[string]int{}
	seen := map[string]bool{}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if text == "" {
			break
		}
		at := func(err error) error { return fmt.Errorf("line %d %q: %w", n+1, line, err) }
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			kind, rest, _ := strings.Cut(rest, " ")
			name, arg, ok := strings.Cut(rest, " ")
			if kind != "HELP" && kind != "TYPE" {
				continue // a comment
			}
			if !ok || !validName(name, true) {
				return nil, at(fmt.Errorf("%s line without a metric name and text", kind))
			}
			i, known := byName[name]
			if !known {
				if len(fams) > 0 && fams[len(fams)-1].name >= name {
					return nil, at(fmt.Errorf("family %s after %s: not sorted", name, fams[len(fams)-1].name))
				}
				fams = append(fams, textFamily{name: name})
				i = len(fams) - 1
				byName[name] = i
			} else if i != len(fams)-1 {
				return nil, at(fmt.Errorf("family %s is not contiguous", name))
			}
			f := &fams[i]
			if len(f.samples) > 0 {
				return nil, at(fmt.Errorf("%s of %s after its samples", kind, name))
			}
			switch kind {
			case "HELP":
				if f.hasHelp {
					return nil, at(fmt.Errorf("a second HELP of %s", name))
				}
				h, err := unescape(arg, false)
				if err != nil {
					return nil, at(err)
				}
				f.help, f.hasHelp = h, true
			case "TYPE":
				if f.typ != "" {
					return nil, at(fmt.Errorf("a second TYPE of %s", name))
				}
				if !slices.Contains([]string{"counter", "gauge", "histogram", "summary", "untyped"}, arg) {
					return nil, at(fmt.Errorf("type %q", arg))
				}
				f.typ = arg
			}
			continue
		}
		if line == "" || line[0] == '#' {
			return nil, at(fmt.Errorf("an empty line or a comment without a space"))
		}
		s, err := readSample(line)
		if err != nil {
			return nil, at(err)
		}
		if len(fams) == 0 || fams[len(fams)-1].typ == "" {
			return nil, at(fmt.Errorf("a sample before its family's TYPE"))
		}
		f := &fams[len(fams)-1]
		if !belongs(f, s.name) {
			return nil, at(fmt.Errorf("sample %s is not of family %s (%s)", s.name, f.name, f.typ))
		}
		key := s.name + fmt.Sprint(s.labels)
		if seen[key] {
			return nil, at(fmt.Errorf("a second sample of the series %s", key))
		}
		seen[key] = true
		f.samples = append(f.samples, s)
	}
	for _, f := range fams {
		if f.typ == "" {
			return nil, fmt.Errorf("family %s has no TYPE", f.name)
		}
		if f.typ == "histogram" {
			if err := checkHistogram(f); err != nil {
				return nil, err
			}
		}
	}
	return fams, nil
}

func belongs(f *textFamily, sample string) bool {
	switch f.typ {
	case "histogram":
		return sample == f.name+"_bucket" || sample == f.name+"_sum" || sample == f.name+"_count"
	case "summary":
		return sample == f.name || sample == f.name+"_sum" || sample == f.name+"_count"
	}
	return sample == f.name
}

func checkHistogram(f textFamily) error {
	type hist struct {
		les     []float64
		counts  []float64
		sum     bool
		count   float64
		counted bool
	}
	series := map[string]*hist{}
	var order []string
	for _, s := range f.samples {
		var rest []label
		le := ""
		for _, l := range s.labels {
			if l.name == "le" && s.name == f.name+"_bucket" {
				le = l.value
				continue
			}
			rest = append(rest, l)
		}
		key := fmt.Sprint(rest)
		h := series[key]
		if h == nil {
			h = &hist{}
			series[key] = h
			order = append(order, key)
		}
		switch s.name {
		case f.name + "_bucket":
			v, err := strconv.ParseFloat(le, 64)
			if err != nil || le == "" {
				return fmt.Errorf("%s%s: le %q is not a number", s.name, key, le)
			}
			if n := len(h.les); n > 0 && (v <= h.les[n-1] || s.value < h.counts[n-1]) {
				return fmt.Errorf("%s%s: bucket le=%q (%v) does not follow le=%v (%v) upward", s.name, key, le, s.value, h.les[n-1], h.counts[n-1])
			}
			if h.sum || h.counted {
				return fmt.Errorf("%s%s: a bucket after _sum or _count", s.name, key)
			}
			h.les, h.counts = append(h.les, v), append(h.counts, s.value)
		case f.name + "_sum":
			h.sum = true
		case f.name + "_count":
			h.count, h.counted = s.value, true
		}
	}
	for _, key := range order {
		h := series[key]
		n := len(h.les)
		switch {
		case n == 0 || !math.IsInf(h.les[n-1], 1):
			return fmt.Errorf("%s%s: the buckets do not end in +Inf", f.name, key)
		case !h.sum || !h.counted:
			return fmt.Errorf("%s%s: no _sum or no _count", f.name, key)
		case h.counts[n-1] != h.count:
			return fmt.Errorf("%s%s: +Inf bucket %v, _count %v", f.name, key, h.counts[n-1], h.count)
		}
	}
	return nil
}

// readSample reads `name{l="v",...} value`.
func readSample(line string) (textSample, error) {
	var s textSample
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name = line[:i]
	if !validName(s.name, true) {
		return s, fmt.Errorf("metric name %q", s.name)
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq < 0 || !validName(rest[:eq], false) {
				return s, fmt.Errorf("label name in %q", rest)
			}
			name := rest[:eq]
			rest = rest[eq+1:]
			if !strings.HasPrefix(rest, `"`) {
				return s, fmt.Errorf("label %s: value not quoted", name)
			}
			end := 1
			for ; end < len(rest) && rest[end] != '"'; end++ {
				if rest[end] == '\\' {
					end++
				}
			}
			if end >= len(rest) {
				return s, fmt.Errorf("label %s: value not closed", name)
			}
			v, err := unescape(rest[1:end], true)
			if err != nil {
				return s, fmt.Errorf("label %s: %w", name, err)
			}
			for _, l := range s.labels {
				if l.name == name {
					return s, fmt.Errorf("label %s twice", name)
				}
			}
			s.labels = append(s.labels, label{name, v})
			rest = rest[end+1:]
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				return s, fmt.Errorf("after label %s: %q", name, rest)
			}
		}
	}
	v, ok := strings.CutPrefix(rest, " ")
	if !ok || strings.ContainsAny(v, " \t") {
		return s, fmt.Errorf("value %q: one space, then a number and no timestamp", rest)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return s, fmt.Errorf("value %q: %w", v, err)
	}
	s.value = f
	return s, nil
}

// unescape undoes \\ and \n (and \" in a label value); any other escape,
// a raw line feed or (in a label value) a bare quote is an error.
func unescape(s string, quoted bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\n':
			return "", fmt.Errorf("a raw line feed")
		case c == '"' && quoted:
			return "", fmt.Errorf("a bare double quote")
		case c == '\\':
			if i+1 == len(s) {
				return "", fmt.Errorf("a trailing backslash")
			}
			i++
			switch s[i] {
			case '\\':
				b.WriteByte('\\')
			case 'n':
				b.WriteByte('\n')
			case '"':
				if !quoted {
					return "", fmt.Errorf(`\" outside a label value`)
				}
				b.WriteByte('"')
			default:
				return "", fmt.Errorf(`escape \%c`, s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || colon && c == ':' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// find is the value of the sample name with exactly these labels (in any
// order).
func find(fams []textFamily, name string, labels ...label) (float64, bool) {
	for _, f := range fams {
		for _, s := range f.samples {
			if s.name == name && len(s.labels) == len(labels) && containsAll(s.labels, labels) {
				return s.value, true
			}
		}
	}
	return 0, false
}

func containsAll(have, want []label) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
