package webhook

import (
	"net/netip"
)

// refusedRanges are the networks a webhook may not reach unless
// AllowPrivate is set: everything that is this host, this network, the
// cloud's metadata service, or not a public unicast destination at all.
var refusedRanges = func() []struct {
	p      netip.Prefix
	reason string
} {
	rows := []struct{ cidr, reason string }{
		{"0.0.0.0/8", "this network"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared address space (CGNAT)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (cloud metadata)"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.0.2.0/24", "documentation"},
		{"192.88.99.0/24", "6to4 relay anycast"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"}, // and 255.255.255.255, broadcast
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible (deprecated)"},
		{"100::/64", "discard-only"},
		{"2001::/23", "IETF protocol assignments"},
		{"2001:db8::/32", "documentation"},
		{"3fff::/20", "documentation"},
		{"fc00::/7", "private (unique local)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local"},
		{"ff00::/8", "multicast"},
	}
	out := make([]struct {
		p      netip.Prefix
		reason string
	}, len(rows))
	for i, r := range rows {
		out[i].p, out[i].reason = netip.MustParsePrefix(r.cidr), r.reason
	}
	return out
}()

// IPv6 forms that carry an IPv4 address inside them; the address inside
// is judged too, or ::ffff:127.0.0.1 and 64:ff9b::a9fe:a9fe would slip by.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	nat64L = netip.MustParsePrefix("64:ff9b:1::/48")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// AddrRefused says why a webhook may not connect to ip, or "" when it may.
// A zone is ignored; IPv4-mapped, NAT64 and 6to4 forms
// are judged by the IPv4 address they carry as well.
func AddrRefused(ip netip.Addr) string {
	if !ip.IsValid() {
		return "not an IP address"
	}
	ip = ip.WithZone("").Unmap()
	if r := rangeRefused(ip); r != "" {
		return r
	}
	if ip.Is6() {
		b := ip.As16()
		var inner netip.Addr
		switch {
		case nat64.Contains(ip):
			inner = netip.AddrFrom4([4]byte(b[12:16]))
		case sixTo4.Contains(ip):
			inner = netip.AddrFrom4([4]byte(b[2:6]))
		}
		if inner.IsValid() {
			if r := rangeRefused(inner); r != "" {
				return r + " (inside an IPv6 address)"
			}
		}
		if nat64L.Contains(ip) {
			return "local-use NAT64"
		}
	}
	return ""
}

func rangeRefused(ip netip.Addr) string {
	for _, r := range refusedRanges {
		if r.p.Contains(ip) {
			return r.reason
		}
	}
	return ""
}
