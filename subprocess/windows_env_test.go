package subprocess

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Windows' environment rules (names are case-insensitive), exercised on any OS through
// envRules{foldCase: true}, next to the POSIX rules for contrast.

var (
	winEnv   = envRules{foldCase: true}
	posixEnv = envRules{}
)

func TestWindowsEnvMerge(t *testing.T) {
	base := []string{`Path=C:\Windows`, `TEMP=C:\Temp`, `windir=C:\Windows`}
	extra := []string{`PATH=D:\bin`, `WINDIR=X`, `New=1`}

	assert.Equal(t, []string{`PATH=D:\bin`, `TEMP=C:\Temp`, `WINDIR=X`, `New=1`}, mergeEnv(base, extra, winEnv),
		"one entry per name whatever its case; it keeps its place and takes the later spelling and value")
	assert.Equal(t, []string{`Path=C:\Windows`, `TEMP=C:\Temp`, `windir=C:\Windows`, `PATH=D:\bin`, `WINDIR=X`, `New=1`},
		mergeEnv(base, extra, posixEnv), "POSIX: names differing in case are different variables")
	assert.Equal(t, []string{"A=3"}, mergeEnv([]string{"a=1"}, []string{"A=2", "A=3"}, winEnv))
}

func TestWindowsEnvScrub(t *testing.T) {
	host := []string{
		"github_Token=t", "Api_Key=k", "aws_secret_access_key=s", "Db_Password=p", "my_passwd=p",
		"AzureCredentials=c", "dsh_depth=1", "Dsh_Id=2", "KeyBoard_Layout=us", "Ssh_Auth_Sock=s",
		`Path=C:\a`, `PATH=C:\b`, "HOME=h", "broken",
	}
	assert.Equal(t, []string{"KeyBoard_Layout=us", `PATH=C:\b`, "HOME=h"},
		scrubEnv(host, "DSH_", []string{"keyboard_layout"}, winEnv),
		"credential words, the managed prefix and the allow-list all match case-insensitively; duplicates fold")
	assert.Equal(t, []string{"dsh_depth=1", "Dsh_Id=2", `Path=C:\a`, `PATH=C:\b`, "HOME=h"},
		scrubEnv(host, "DSH_", []string{"keyboard_layout"}, posixEnv),
		"POSIX: prefix and allow-list are case-sensitive (credential words never are)")
}

func TestWindowsEnvLookup(t *testing.T) {
	env := []string{`Path=C:\a`, "ComSpec=cmd.exe", `PATH=C:\b`}
	v, ok := lookupEnv(env, "path", winEnv)
	assert.True(t, ok)
	assert.Equal(t, `C:\b`, v, "the later spelling wins")
	v, ok = lookupEnv(env, "COMSPEC", winEnv)
	assert.True(t, ok)
	assert.Equal(t, "cmd.exe", v)
	_, ok = lookupEnv(env, "path", posixEnv)
	assert.False(t, ok)
	assert.True(t, hasPrefix("dsh_x", "DSH_", winEnv))
	assert.False(t, hasPrefix("dsh_x", "DSH_", posixEnv))
	assert.False(t, hasPrefix("DS", "DSH_", winEnv))
}

func TestDriveCwdEntriesSurvive(t *testing.T) {
	r := envRules{foldCase: true}
	got := scrubEnv([]string{`=C:=C:\work`, "Path=C:\\bin", "API_TOKEN=x"}, "DSH_", nil, r)
	assert.Equal(t, []string{`=C:=C:\work`, "Path=C:\\bin"}, got)
	v, ok := lookupEnv(got, "=c:", r)
	assert.True(t, ok)
	assert.Equal(t, `C:\work`, v)
}
