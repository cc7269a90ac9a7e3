package redact

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Phone numbers are checked against the numbering plans of
// libphonenumber's metadata, as github.com/nyaruka/phonenumbers ships
// them: plans_gen.go holds, for each region, its country calling code,
// national prefix, possible lengths and the patterns of its types of
// number, generated from that package (go generate: go test -run
// TestPlansGenerated . -args -update), so that redact does not link the package,
// its protobuf runtime and its carrier, geocoding and time-zone data
// (about 7 MB of a binary) to use 1% of it. TestPlansGenerated checks that
// the file matches the package's version in go.mod, and
// TestPlansAgreeWithLibphonenumber that the matching here agrees with the
// package's IsValidNumber.

//go:generate go test -run TestPlansGenerated . -args -update

// plans are the countries' numbering plans (planData), indexed on first
// use: by region code, and the regions of each country calling code.
var plans = sync.OnceValue(func() (p struct {
	byRegion map[string]*plan
	byCode   map[int][]*plan
}) {
	p.byRegion, p.byCode = map[string]*plan{}, map[int][]*plan{}
	for i := range planData {
		pl := &planData[i]
		if _, dup := p.byRegion[pl.region]; !dup {
			p.byRegion[pl.region] = pl
		}
		p.byCode[pl.cc] = append(p.byCode[pl.cc], pl)
	}
	// The main region of a calling code first (the United States of the
	// 25 regions of +1): most numbers are its.
	for _, ps := range p.byCode {
		slices.SortStableFunc(ps, func(a, b *plan) int {
			switch {
			case a.main == b.main:
				return 0
			case a.main:
				return -1
			}
			return 1
		})
	}
	return p
})

// plan is one region's numbering plan: its country calling code, its
// national (trunk) prefix, the lengths of its national significant
// numbers and the pattern of each type of them (fixed line, mobile,
// toll-free, ...). Each pattern is a regular expression of its own, the
// commonest types first: one alternation of them all is too large for
// Go's backtracking matcher and runs several times slower.
type plan struct {
	region   string
	cc       int
	main     bool // the main region of its calling code
	ndd      string
	lengths  []int32
	patterns []string
	once     sync.Once
	res      []*regexp.Regexp // ^(?:pattern)$ of each, compiled on first use
}

// valid reports whether nat, a national significant number, is one of
// the plan's: a possible length, and a number of one of its types (what
// libphonenumber's IsValidNumberForRegion checks).
func (p *plan) valid(nat string) bool {
	if nat == "" || len(p.lengths) > 0 && !slices.Contains(p.lengths, int32(len(nat))) {
		return false
	}
	p.once.Do(func() {
		for _, pat := range p.patterns {
			if re, err := regexp.Compile("^(?:" + pat + ")$"); err == nil {
				p.res = append(p.res, re)
			}
		}
	})
	for _, re := range p.res {
		if re.MatchString(nat) {
			return true
		}
	}
	return false
}

// validPhone reports whether the phone number written as s (with its
// country code after a +, else nationally in one of regions) is valid
// under its country's numbering plan.
func validPhone(s string, regions []string) bool {
	d := digits(s)
	if s[0] == '+' {
		return validInternational(d)
	}
	ps := plans()
	return slices.ContainsFunc(regions, func(r string) bool {
		p := ps.byRegion[r]
		return p != nil && p.valid(p.withoutTrunk(d))
	})
}

// validInternational reports whether the digits d, a country calling
// code and a national number, are a valid number of that country.
func validInternational(d string) bool {
	for k := 1; k <= 3 && k < len(d); k++ {
		nat := d[k:]
		if cands := plans().byCode[atoi(d[:k])]; len(cands) > 0 { // calling codes are prefix-free
			return slices.ContainsFunc(cands, func(p *plan) bool {
				// "+44 (0)20 …": the trunk prefix written after the code.
				rest := p.withoutTrunk(nat)
				return p.valid(nat) || rest != nat && p.valid(rest)
			})
		}
	}
	return false
}

// withoutTrunk returns the national number d without the plan's national
// (trunk) prefix, or d when it has none.
func (p *plan) withoutTrunk(d string) string {
	if p.ndd == "" {
		return d
	}
	return strings.TrimPrefix(d, p.ndd)
}
