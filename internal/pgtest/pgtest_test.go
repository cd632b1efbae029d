package pgtest_test
import ("testing";"os";"context";"github.com/jackc/pgx/v5";"github.com/ctxkit/ctxkit/internal/pgtest")
func TestMain(m *testing.M){ c:=m.Run(); pgtest.Stop(); os.Exit(c)}
func TestStart(t *testing.T){ s:=pgtest.Shared(t); u:=s.NewDatabase(t); c,err:=pgx.Connect(context.Background(),u); if err!=nil{t.Fatal(err)}; var su bool; c.QueryRow(context.Background(),"select rolsuper from pg_roles where rolname=current_user").Scan(&su); t.Log(u, su); c.Close(context.Background())}
