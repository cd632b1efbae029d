package gateway

// ModelNames lists the model names clients may ask for (routes and the
// models the providers list), in the order GET /v1/models gives them.
func (g *Gateway) ModelNames() []string {
	names := make([]string, len(g.models))
	for i, m := range g.models {
		names[i] = m.ID
	}
	return names
}

// Config is the configuration the gateway serves, for reading only (the
// server describes the routes from it): changing it changes nothing the
// gateway does, and races with requests.
func (g *Gateway) Config() *Config { return g.cfg }
