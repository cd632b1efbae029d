package gateway

// Mock is the configuration of a provider of type mock: an upstream that
// answers in process, without any network.
type Mock struct{}
