package gateway

// SetForwarding turns the forwarding of same-dialect streams on or off,
// for the tests that hold one path to the other.
func SetForwarding(g *Gateway, on bool) { g.noForward = !on }
