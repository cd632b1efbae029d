package server

import (
	"net/http"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// gatewayRoutesReply is GET /gateway/routes' answer: what the gateway's
// configuration routes where, for people to read (the console's gateway
// page). It names providers, their types and models, and each route's
// targets; never a key, a key's variable or file, nor a base URL (which
// may hold an account's name or an internal host).
type gatewayRoutesReply struct {
	Providers []gatewayProvider `json:"providers"`
	Routes    []gatewayRoute    `json:"routes"`
}

type gatewayProvider struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	API    string   `json:"api,omitempty"` // openai: chat or responses
	Models []string `json:"models"`        // served by this provider under their own names
}

type gatewayRoute struct {
	Model       string          `json:"model"` // the name clients send
	Targets     []gatewayTarget `json:"targets"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	MaxTime     string          `json:"max_time,omitempty"` // a Go duration ("30s")
	Record      bool            `json:"record"`
}

type gatewayTarget struct {
	Provider string `json:"provider"`
	Type     string `json:"type"`
	Model    string `json:"model"` // the upstream's name of the model
}

// gatewayRoutes serves GET /gateway/routes to any valid token: every
// token may call the gateway, and its model names are GET /v1/models'
// anyway; this adds where each one goes.
func (s *Server) gatewayRoutes(w http.ResponseWriter, r *http.Request, _ Principal) error {
	writeJSON(w, http.StatusOK, describeRoutes(s.opts.Gateway.Config()))
	return nil
}

func describeRoutes(cfg *gateway.Config) gatewayRoutesReply {
	out := gatewayRoutesReply{Providers: []gatewayProvider{}, Routes: []gatewayRoute{}}
	types := map[string]string{}
	for _, p := range cfg.Providers {
		types[p.Name] = p.Type
		out.Providers = append(out.Providers, gatewayProvider{Name: p.Name, Type: p.Type, API: p.API,
			Models: append([]string{}, p.Models...)})
	}
	for _, rc := range cfg.Routes {
		rt := gatewayRoute{Model: rc.Model, Targets: []gatewayTarget{}, MaxAttempts: rc.MaxAttempts, Record: rc.Record}
		if rc.MaxTime != 0 {
			rt.MaxTime = time.Duration(rc.MaxTime).String()
		}
		for _, t := range rc.Targets {
			rt.Targets = append(rt.Targets, gatewayTarget{Provider: t.Provider, Type: types[t.Provider], Model: t.Model})
		}
		out.Routes = append(out.Routes, rt)
	}
	return out
}
