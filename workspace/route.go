package workspace

import (
	"fmt"
	"os"
	"strings"

	"github.com/ctxkit/ctxkit/envelope"
)

// Decision is Route's answer.
type Decision struct {
	UseIndex  bool                  // the index may answer
	Freshness envelope.Freshness    // FRESH only when UseIndex
	Status    *envelope.IndexStatus // nil when there is no readable status
	Head      string                // the commit HEAD names, when known
	Reason    string                // why the index is not used
}

// Route decides whether the index of the repository at repoDir may answer:
// only when its status says fresh and the commit it indexed is the one HEAD
// names now. A status of another schema version (an older or newer ctxkit
// wrote it) is not used and its freshness is UNKNOWN: this ctxkit cannot
// tell what such an index holds. It reads repoDir through an os.Root, never
// outside it.
func Route(repoDir string) Decision {
	root, err := os.OpenRoot(repoDir)
	if err != nil {
		return Decision{Freshness: envelope.Unknown, Reason: "repository: " + err.Error()}
	}
	defer root.Close()
	return RouteIn(root)
}

// RouteIn is Route for a repository already opened as root.
func RouteIn(root *os.Root) Decision {
	st, err := ReadStatus(root)
	if err != nil {
		return Decision{Freshness: envelope.Unknown, Reason: err.Error()}
	}
	d := Decision{Status: st}
	if st.SchemaVersion != SchemaVersion {
		d.Freshness, d.Reason = envelope.Unknown, fmt.Sprintf("the index has schema version %d; this ctxkit reads version %d (run ctxkit index again)",
			st.SchemaVersion, SchemaVersion)
		return d
	}
	if st.IndexState != envelope.IndexFresh {
		d.Freshness, d.Reason = envelope.Stale, fmt.Sprintf("index state is %q", st.IndexState)
		return d
	}
	head, err := readHead(root)
	d.Head = head
	switch {
	case err != nil:
		d.Freshness, d.Reason = envelope.Unknown, "git HEAD: "+err.Error()
	case st.LastIndexedCommit == "":
		d.Freshness, d.Reason = envelope.Unknown, "the index does not record a commit"
	case !strings.EqualFold(head, st.LastIndexedCommit):
		d.Freshness, d.Reason = envelope.Stale, fmt.Sprintf("HEAD is %s; the index is of %s", short(head), short(st.LastIndexedCommit))
	default:
		d.UseIndex, d.Freshness = true, envelope.Fresh
	}
	return d
}
