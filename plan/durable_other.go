//go:build !linux

package plan

// syncfsMin is unused where there is no syncfs.
const syncfsMin = 0

// syncBatch reports false: without syncfs each file is synced on its own.
func syncBatch(files []staged, min int) (bool, error) { return false, nil }
