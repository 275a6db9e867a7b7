package shellsafe

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassify(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "existing.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	type class struct{ ReadOnly, Destructive bool }
	ro, rw, destructive := class{true, false}, class{false, false}, class{false, true}
	for _, tc := range []struct {
		cmd  string
		want class
	}{
		{"ls -la", ro}, {"cat a b | head -5 | wc -l", ro}, {"grep -rn foo . && rg bar", ro},
		{"find . -name '*.go'", ro}, {"pwd; echo hi; which go; file x; stat y; du -sh .; df -h", ro},
		{"git status", ro}, {"git log --oneline -5", ro}, {"git diff HEAD~1", ro}, {"git show HEAD", ro},
		{"git branch", ro}, {"git branch -a -v", ro}, {"git rev-parse HEAD", ro}, {"git -C sub status", ro},
		{"git --no-pager log", ro}, {"git stash list", ro}, {"git remote -v", ro}, {"git config --get user.name", ro},
		{"git tag", ro}, {"git clean -n", ro}, {"sed -n '1,5p' f", ro}, {"sort f | uniq -c", ro},
		{"echo hi > /dev/null 2>&1", ro}, {"timeout 5 ls", ro}, {"bash -c 'ls; pwd'", ro}, {"env", ro},
		{"command -v go", ro}, {"date", ro}, {"diff <(ls a) <(ls b)", ro}, {"jq .x f.json", ro},

		{"npm install", rw}, {"make", rw}, {"touch x", rw}, {"mkdir -p a/b", rw}, {"cp a b", rw}, {"mv a b", rw},
		{"echo hi > new.txt", rw}, {"echo hi >> existing.txt", rw}, {"git commit -m x", rw}, {"git add .", rw},
		{"git branch feature", rw}, {"git push origin main", rw}, {"git checkout main", rw}, {"git stash", rw},
		{"git -c core.pager=less log", rw}, {"git log --output=x", rw}, {"sed -i s/a/b/ f", rw},
		{"sed 's/a/b/w out' f", rw}, {"sort -o out in", rw}, {"chmod +x run.sh", rw}, {"sudo ls", rw},
		{"curl -o x https://e.com", rw}, {"tee out.txt", rw}, {"find . -fprint out", rw}, {"rg --pre cat x", rw},
		{"$CMD", rw}, {"sh -c \"$X\"", rw}, {"PATH=/tmp; ls", rw}, {"time -o out ls", rw}, {"git restore --staged f", rw},

		{"rm -rf build", destructive}, {"rm x", destructive}, {"rmdir d", destructive}, {"shred -u f", destructive},
		{"dd if=/dev/zero of=disk", destructive}, {"mkfs.ext4 /dev/sda", destructive}, {"truncate -s 0 f", destructive},
		{"git reset --hard HEAD~1", destructive}, {"git clean -fd", destructive}, {"git clean -xdf", destructive},
		{"git checkout -- .", destructive}, {"git checkout .", destructive}, {"git restore src/", destructive},
		{"git push --force", destructive}, {"git push -f origin main", destructive}, {"git push origin +main", destructive},
		{"git push --force-with-lease", destructive}, {"git push origin :old", destructive}, {"git branch -D old", destructive},
		{"git branch -d --force old", destructive}, {"git stash drop", destructive}, {"git reflog expire --all", destructive},
		{"chmod -R 777 .", destructive}, {"chown -R me .", destructive}, {"find . -name '*.o' -delete", destructive},
		{"find . -exec rm {} +", destructive}, {"ls | xargs rm", destructive}, {"sudo rm -rf /", destructive},
		{"echo x > existing.txt", destructive}, {"cat a >| existing.txt", destructive}, {"echo > $OUT", destructive},
		{"bash -c 'rm -rf x'", destructive}, {"ls && rm y", destructive}, {"echo $(rm z)", destructive},
		{"timeout 3 git clean -f", destructive}, {"rsync -a --delete src/ dst/", destructive}, {"pkill node", destructive},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			c := Parse(tc.cmd).Classify(Options{Dir: dir})
			got := class{c.ReadOnly, c.Destructive}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Classify(%q) (-want +got):\n%s\nwhy: %s", tc.cmd, diff, c.Why)
			}
			if !c.ReadOnly && c.Why == "" {
				t.Errorf("Classify(%q) is not read-only but gives no reason", tc.cmd)
			}
		})
	}
}
