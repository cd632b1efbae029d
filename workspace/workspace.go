// Package workspace keeps the index of a repository that ctxkit searches:
// the indexer that stores each tracked text file as a breadcrumb, the
// files it leaves in the repository (.ctxkit/index.json, the status;
// .ctxkit/manifest.json, what it wrote; .ctxkit/instance, the index's id),
// and the rules that decide when the index may answer.
//
// Index writes the breadcrumbs to a Target: a store opened in-process
// (NewStoreTarget) or a ctxkit server over HTTP (NewServerTarget).
// Route says whether a repository's index is fresh (its status says so and
// it indexed the commit HEAD names); CheckFile and GuardFile guard a single
// file against changes made after indexing. Results and statuses use the
// envelope vocabulary (envelope.IndexStatus, envelope.Result).
package workspace

// FileSchema is the schema of the breadcrumbs Index writes: one per
// tracked text file of a repository, tagged RepoTag(name).
const FileSchema = "file.v1"

// RepoTag is the tag of a repository's file breadcrumbs.
func RepoTag(name string) string { return "repo:" + name }

// FileContext is the context of a file.v1 breadcrumb.
type FileContext struct {
	Path      string `json:"path"`
	Language  string `json:"language,omitempty"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
	Index     string `json:"index,omitempty"` // the instance id of the index that wrote it (InstanceFile)
}
