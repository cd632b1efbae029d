module github.com/ctxkit/ctxkit

go 1.26

require (
	github.com/itchyny/gojq v0.12.20
	github.com/mailgun/raymond/v2 v2.0.48
	github.com/rogpeppe/go-internal v1.16.0
	github.com/theory/jsonpath v0.12.1
	github.com/tiktoken-go/tokenizer v0.10.0
)

require (
	github.com/dlclark/regexp2/v2 v2.5.1 // indirect
	github.com/itchyny/timefmt-go v0.1.9 // indirect
	golang.org/x/sys v0.41.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
