package mistral

// The tests reach the finish-reason mapping, which DecodeStream keeps to
// itself.
var StopReason = stopReason
