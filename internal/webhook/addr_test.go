package webhook

import (
	"net/netip"
	"testing"
)

func TestAddrRefused(t *testing.T) {
	refused := []string{
		"0.0.0.0", "0.255.255.255",
		"10.0.0.0", "10.255.255.255",
		"100.64.0.0", "100.127.255.255",
		"127.0.0.1", "127.255.255.255",
		"169.254.0.1", "169.254.169.254", "169.254.255.255",
		"172.16.0.0", "172.31.255.255",
		"192.0.0.1", "192.0.2.0", "192.0.2.255", "192.88.99.1",
		"192.168.0.0", "192.168.255.255",
		"198.18.0.0", "198.19.255.255",
		"198.51.100.7", "203.0.113.255",
		"224.0.0.1", "239.255.255.255", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::127.0.0.1", "::8.8.8.8",
		"::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "::ffff:100.64.0.1", "::ffff:0.0.0.0",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::1",
		"2002:7f00:1::1", "2002:a9fe:a9fe::1",
		"100::1", "2001::1", "2001:db8::1", "2001:db8:ffff::1", "3fff::1",
		"fc00::1", "fdff:ffff::1", "fe80::1", "fe80::1%eth0", "febf::1", "fec0::1",
		"ff02::1", "ff0e::1",
	}
	allowed := []string{
		"1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0",
		"100.63.255.255", "100.128.0.0",
		"126.255.255.255", "128.0.0.0",
		"169.253.255.255", "169.255.0.0",
		"172.15.255.255", "172.32.0.0",
		"192.0.1.255", "192.0.3.0", "192.167.255.255", "192.169.0.0",
		"198.17.255.255", "198.20.0.0", "198.51.99.255", "203.0.114.0",
		"223.255.255.255",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
		"2001:4860:4860::8888", "2606:4700:4700::1111", "2001:200::1", "2001:dba::1",
		"fbff:ffff::1", "fe00::1",
	}
	for _, s := range refused {
		if r := AddrRefused(netip.MustParseAddr(s)); r == "" {
			t.Errorf("%s allowed, want refused", s)
		}
	}
	for _, s := range allowed {
		if r := AddrRefused(netip.MustParseAddr(s)); r != "" {
			t.Errorf("%s refused (%s), want allowed", s, r)
		}
	}
	if AddrRefused(netip.Addr{}) == "" {
		t.Error("the zero Addr allowed")
	}
}

// FuzzAddrRefused holds the rule to net/netip's own classification:
// anything netip calls loopback, private, link-local, multicast or
// unspecified (in any IPv6 form carrying such an IPv4 address) is refused.
func FuzzAddrRefused(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::ffff:10.0.0.1", "8.8.8.8", "fe80::1", "2001:db8::1", "64:ff9b::a9fe:a9fe", "ff02::1", "::"} {
		a := netip.MustParseAddr(s).As16()
		f.Add(a[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ips []netip.Addr
		if len(b) >= 16 {
			ips = append(ips, netip.AddrFrom16([16]byte(b[:16])))
		}
		if len(b) >= 4 {
			v4 := netip.AddrFrom4([4]byte(b[:4]))
			ips = append(ips, v4, netip.AddrFrom16(v4.As16()),
				netip.AddrFrom16([16]byte{0: 0x00, 1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}))
		}
		for _, ip := range ips {
			got := AddrRefused(ip) != ""
			inner := ip.Unmap()
			if ip.Is6() && netip.MustParsePrefix("64:ff9b::/96").Contains(ip) {
				a := ip.As16()
				inner = netip.AddrFrom4([4]byte(a[12:]))
			}
			for _, x := range []netip.Addr{ip.Unmap(), inner} {
				ref := x.IsLoopback() || x.IsPrivate() || x.IsLinkLocalUnicast() || x.IsLinkLocalMulticast() ||
					x.IsInterfaceLocalMulticast() || x.IsMulticast() || x.IsUnspecified()
				if ref && !got {
					t.Fatalf("%s (%s by netip's account) allowed", ip, x)
				}
			}
			// Nothing netip calls global unicast outside our extra table
			// is refused: the table is the only source of refusals.
			if got && ip.Unmap().IsGlobalUnicast() && !inTable(ip.Unmap()) && !inTable(inner) && !netip.MustParsePrefix("2002::/16").Contains(ip) && !netip.MustParsePrefix("64:ff9b:1::/48").Contains(ip) {
				t.Fatalf("%s refused (%s) but in no listed range", ip, AddrRefused(ip))
			}
		}
	})
}

func inTable(ip netip.Addr) bool {
	for _, r := range refusedRanges {
		if r.p.Contains(ip) {
			return true
		}
	}
	return false
}
