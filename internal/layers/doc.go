// Package layers states ctxkit's dependency rules and its test checks them
// for every package of the module, so that the tree's layers hold as it
// grows. From the bottom:
//
//   - leaves (internal/*, apart from app and testkit) import no ctxkit
//     package but other leaves;
//   - library packages (chat, wire/..., view, relay, envelope, workspace,
//     patch, plan, store/...) import leaves and each other, never an
//     application package or a test kit;
//   - test kits (internal/testkit/...) import leaves and libraries;
//   - application packages (internal/app/...) import anything below them;
//   - cmd/ctxkit imports the application packages.
//
// Some libraries promise more: view, chat, envelope and relay reach no
// storage, network, HTTP or processes, even through what they import; wire
// packages never reach the store. A package in a new top-level directory
// must be given its layer in the test's table before the test passes (one
// under an existing tree takes that tree's layer), which is the point:
// placing a package is a decision, not an accident.
package layers
