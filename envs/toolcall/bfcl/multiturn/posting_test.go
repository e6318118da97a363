package multiturn

import (
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// twCases are calls the recorded runs do not make, on a config each, with
// the results BFCL's TwitterAPI gives them (Python 3.11): keys of other
// types than the stored ones, unhashable ids, malformed tweets, arguments
// of the wrong type.
var twCases = []struct {
	config string
	calls  [][2]string
}{
	{
		config: `{"username": "u", "password": "p", "tweets": {"1": {"id": 1, "username": "u", "content": "Hello World", "tags": ["#Go", "#Py"], "mentions": []}, " 2": {"id": 2, "username": "v", "content": "Bye", "tags": "#ab"}, "3": {"id": 3, "username": "u", "content": null, "tags": [], "mentions": "x"}}, "comments": {"1": [{"username": "v", "content": "c0"}]}, "tweet_counter": 4}`,
		calls: [][2]string{
			{`posting_get_login_status()`, `{"login_status": false}`},
			{`post_tweet('x')`, `{"error": "User not authenticated. Please authenticate before posting."}`},
			{`retweet(1)`, `{"error": "User not authenticated. Please authenticate before retweeting."}`},
			{`comment(1, 'x')`, `{"error": "User not authenticated. Please authenticate before commenting."}`},
			{`follow_user('a')`, `{"error": "User not authenticated. Please authenticate before following."}`},
			{`list_all_following()`, `{"error": "User not authenticated. Please authenticate before listing following."}`},
			{`unfollow_user('a')`, `{"error": "User not authenticated. Please authenticate before unfollowing."}`},
			{`authenticate_twitter('u', 'P')`, `{"authentication_status": false}`},
			{`authenticate_twitter(username='u', password='p')`, `{"authentication_status": true}`},
			{`posting_get_login_status()`, `{"login_status": true}`},
			{`get_tweet(1)`, `{"id": 1, "username": "u", "content": "Hello World", "tags": ["#Go", "#Py"], "mentions": []}`},
			{`get_tweet('1')`, `{"error": "Tweet with ID 1 not found."}`},
			{`get_tweet(1.0)`, `{"id": 1, "username": "u", "content": "Hello World", "tags": ["#Go", "#Py"], "mentions": []}`},
			{`get_tweet(True)`, `{"id": 1, "username": "u", "content": "Hello World", "tags": ["#Go", "#Py"], "mentions": []}`},
			{`get_tweet([1])`, `Error during execution: unhashable type: 'list'`},
			{`get_tweet({})`, `Error during execution: unhashable type: 'dict'`},
			{`get_tweet(None)`, `{"error": "Tweet with ID None not found."}`},
			{`get_tweet(2.5)`, `{"error": "Tweet with ID 2.5 not found."}`},
			{`get_tweet_comments(1)`, `[]`},
			{`get_tweet_comments('1')`, `{"error": "Tweet with ID 1 not found."}`},
			{`get_tweet_comments(9)`, `{"error": "Tweet with ID 9 not found."}`},
			{`comment(1.0, 'hi')`, `{"comment_status": "Comment added successfully"}`},
			{`comment(True, None)`, `{"comment_status": "Comment added successfully"}`},
			{`get_tweet_comments(1)`, `[{'username': 'u', 'content': 'hi'}, {'username': 'u', 'content': None}]`},
			{`comment([1], 'x')`, `Error during execution: unhashable type: 'list'`},
			{`comment(7, 'x')`, `{"error": "Tweet with ID 7 not found."}`},
			{`retweet(1)`, `{"retweet_status": "Successfully retweeted"}`},
			{`retweet(1.0)`, `{"retweet_status": "Already retweeted"}`},
			{`retweet(2)`, `{"retweet_status": "Successfully retweeted"}`},
			{`retweet('2')`, `{"error": "Tweet with ID 2 not found."}`},
			{`retweet([2])`, `Error during execution: unhashable type: 'list'`},
			{`retweet(99)`, `{"error": "Tweet with ID 99 not found."}`},
			{`get_user_stats('u')`, `{"tweet_count": 2, "following_count": 2, "retweet_count": 2}`},
			{`get_user_stats('v')`, `{"tweet_count": 1, "following_count": 0, "retweet_count": 0}`},
			{`get_user_stats(None)`, `{"tweet_count": 0, "following_count": 0, "retweet_count": 0}`},
			{`get_user_stats([1])`, `Error during execution: unhashable type: 'list'`},
			{`mention(1, 'ab')`, `{"mention_status": "Users mentioned successfully"}`},
			{`mention(1, None)`, `Error during execution: 'NoneType' object is not iterable`},
			{`mention(1, 5)`, `Error during execution: 'int' object is not iterable`},
			{`mention(1, {'k': 1})`, `{"mention_status": "Users mentioned successfully"}`},
			{`mention(2, ['@z'])`, `Error during execution: 'mentions'`},
			{`mention(3, ['@z'])`, `Error during execution: 'str' object has no attribute 'extend'`},
			{`mention(99, [])`, `{"error": "Tweet with ID 99 not found."}`},
			{`mention([], [])`, `Error during execution: unhashable type: 'list'`},
			{`get_tweet(1)`, `{"id": 1, "username": "u", "content": "Hello World", "tags": ["#Go", "#Py"], "mentions": ["a", "b", "k"]}`},
			{`get_user_tweets('u')`, `[{'id': 1, 'username': 'u', 'content': 'Hello World', 'tags': ['#Go', '#Py'], 'mentions': ['a', 'b', 'k']}, {'id': 3, 'username': 'u', 'content': None, 'tags': [], 'mentions': 'x'}]`},
			{`get_user_tweets('nobody')`, `[]`},
			{`get_user_tweets(None)`, `[]`},
			{`search_tweets('hello')`, `Error during execution: 'NoneType' object has no attribute 'lower'`},
			{`search_tweets('#py')`, `Error during execution: 'NoneType' object has no attribute 'lower'`},
			{`search_tweets(5)`, `Error during execution: 'int' object has no attribute 'lower'`},
			{`follow_user('alice')`, `{"follow_status": false}`},
			{`follow_user('zed')`, `{"follow_status": true}`},
			{`follow_user(1)`, `{"follow_status": true}`},
			{`follow_user(1.0)`, `{"follow_status": false}`},
			{`list_all_following()`, `{"following_list": ["alice", "bob", "zed", 1]}`},
			{`unfollow_user(True)`, `{"unfollow_status": true}`},
			{`unfollow_user('nobody')`, `{"unfollow_status": false}`},
			{`unfollow_user('alice')`, `{"unfollow_status": true}`},
			{`list_all_following()`, `{"following_list": ["bob", "zed"]}`},
			{`post_tweet(None, tags=None, mentions=5)`, `{"id": 4, "username": "u", "content": null, "tags": null, "mentions": 5}`},
			{`post_tweet('Hi\u00e9 "q"', ['#T'], ['@m'])`, `{"id": 5, "username": "u", "content": "Hi\u00e9 \"q\"", "tags": ["#T"], "mentions": ["@m"]}`},
			{`get_tweet(4)`, `{"id": 4, "username": "u", "content": null, "tags": null, "mentions": 5}`},
			{`get_tweet(5)`, `{"id": 5, "username": "u", "content": "Hi\u00e9 \"q\"", "tags": ["#T"], "mentions": ["@m"]}`},
			{`search_tweets('b')`, `Error during execution: 'NoneType' object has no attribute 'lower'`},
			{`get_user_stats('u')`, `{"tweet_count": 4, "following_count": 2, "retweet_count": 2}`},
		},
	},
	{
		config: `{"authenticated": true}`,
		calls: [][2]string{
			{`search_tweets(5)`, `[]`},
			{`post_tweet('a', mentions=['@q'])`, `{"id": 0, "username": "john", "content": "a", "tags": [], "mentions": ["@q"]}`},
			{`search_tweets('A')`, `[{'id': 0, 'username': 'john', 'content': 'a', 'tags': [], 'mentions': ['@q']}]`},
			{`get_user_stats('john')`, `{"tweet_count": 1, "following_count": 2, "retweet_count": 0}`},
			{`list_all_following()`, `{"following_list": ["alice", "bob"]}`},
		},
	},
	{
		config: `{"authenticated": true, "username": "w", "tweets": {"0": {"id": 0, "username": "w", "content": "Go Time", "tags": ["#GoLang", "#Fun"], "mentions": []}, "1": {"id": 1, "username": "w", "content": "nothing", "tags": "#go", "mentions": []}, "2": {"id": 2, "username": "w", "content": "zzz", "tags": ["#FUN"], "mentions": []}, "3": {"id": 3, "username": "w", "content": "yyy", "tags": [5], "mentions": []}}, "tweet_counter": 4}`,
		calls: [][2]string{
			{`search_tweets('#fun')`, `Error during execution: 'int' object has no attribute 'lower'`},
			{`search_tweets('time')`, `Error during execution: 'int' object has no attribute 'lower'`},
			{`search_tweets('')`, `[{'id': 0, 'username': 'w', 'content': 'Go Time', 'tags': ['#GoLang', '#Fun'], 'mentions': []}, {'id': 1, 'username': 'w', 'content': 'nothing', 'tags': '#go', 'mentions': []}, {'id': 2, 'username': 'w', 'content': 'zzz', 'tags': ['#FUN'], 'mentions': []}, {'id': 3, 'username': 'w', 'content': 'yyy', 'tags': [5], 'mentions': []}]`},
			{`search_tweets('#')`, `Error during execution: 'int' object has no attribute 'lower'`},
			{`search_tweets('#golang')`, `Error during execution: 'int' object has no attribute 'lower'`},
			{`search_tweets('y')`, `[{'id': 3, 'username': 'w', 'content': 'yyy', 'tags': [5], 'mentions': []}]`},
			{`search_tweets('q')`, `Error during execution: 'int' object has no attribute 'lower'`},
		},
	},
	{
		config: `{"authenticated": true, "tweets": {"5": {"id": 5, "username": "john", "content": "c", "tags": null}}}`,
		calls: [][2]string{
			{`search_tweets('x')`, `Error during execution: 'NoneType' object is not iterable`},
			{`get_user_tweets('john')`, `[{'id': 5, 'username': 'john', 'content': 'c', 'tags': None}]`},
			{`get_tweet_comments(5.0)`, `[]`},
			{`comment(5, ['x'])`, `{"comment_status": "Comment added successfully"}`},
			{`get_tweet_comments(5)`, `[{'username': 'john', 'content': ['x']}]`},
		},
	},
	{
		config: `{"authenticated": true, "username": "w", "tweets": {"0": {"id": 0, "username": "w", "content": "Go Time", "tags": ["#GoLang", "#Fun"], "mentions": []}, "1": {"id": 1, "username": "w", "content": "nothing", "tags": "#go", "mentions": []}, "2": {"id": 2, "username": "w", "content": "zzz", "tags": ["#FUN"], "mentions": []}}, "tweet_counter": 4}`,
		calls: [][2]string{
			{`search_tweets('#fun')`, `[{'id': 0, 'username': 'w', 'content': 'Go Time', 'tags': ['#GoLang', '#Fun'], 'mentions': []}, {'id': 2, 'username': 'w', 'content': 'zzz', 'tags': ['#FUN'], 'mentions': []}]`},
			{`search_tweets('time')`, `[{'id': 0, 'username': 'w', 'content': 'Go Time', 'tags': ['#GoLang', '#Fun'], 'mentions': []}]`},
			{`search_tweets('')`, `[{'id': 0, 'username': 'w', 'content': 'Go Time', 'tags': ['#GoLang', '#Fun'], 'mentions': []}, {'id': 1, 'username': 'w', 'content': 'nothing', 'tags': '#go', 'mentions': []}, {'id': 2, 'username': 'w', 'content': 'zzz', 'tags': ['#FUN'], 'mentions': []}]`},
			{`search_tweets('#')`, `[{'id': 1, 'username': 'w', 'content': 'nothing', 'tags': '#go', 'mentions': []}]`},
			{`search_tweets('#golang')`, `[{'id': 0, 'username': 'w', 'content': 'Go Time', 'tags': ['#GoLang', '#Fun'], 'mentions': []}]`},
			{`search_tweets('y')`, `[]`},
			{`search_tweets('q')`, `[]`},
		},
	},
}

func TestTwitterAPIEdges(t *testing.T) {
	for i, c := range twCases {
		cfg, err := pyval.Decode([]byte(c.config))
		if err != nil {
			t.Fatal(err)
		}
		tw, err := New("TwitterAPI", cfg.(*pyval.Dict))
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range c.calls {
			if got := runOn(t, "TwitterAPI", tw, call[0]); got != call[1] {
				t.Errorf("case %d: %s\n  got  %s\n  want %s", i, call[0], got, call[1])
			}
		}
	}
}

// TestTwitterAPISharedMentions: post_tweet's default mentions list is one
// list, shared by the tweets an instance posted without mentions, and not
// by another instance's.
func TestTwitterAPISharedMentions(t *testing.T) {
	cfg := pyval.NewDict()
	cfg.Set("authenticated", true)
	a, _ := New("TwitterAPI", cfg)
	for _, call := range [][2]string{
		{`post_tweet('a')`, `{"id": 0, "username": "john", "content": "a", "tags": [], "mentions": []}`},
		{`post_tweet('b', mentions=['@x'])`, `{"id": 1, "username": "john", "content": "b", "tags": [], "mentions": ["@x"]}`},
		{`mention(0, ['@m'])`, `{"mention_status": "Users mentioned successfully"}`},
		{`post_tweet('c')`, `{"id": 2, "username": "john", "content": "c", "tags": [], "mentions": ["@m"]}`},
		{`mention(2, 'n')`, `{"mention_status": "Users mentioned successfully"}`},
		{`get_tweet(0)`, `{"id": 0, "username": "john", "content": "a", "tags": [], "mentions": ["@m", "n"]}`},
		{`get_user_tweets('john')`, `[{'id': 0, 'username': 'john', 'content': 'a', 'tags': [], 'mentions': ['@m', 'n']}, {'id': 1, 'username': 'john', 'content': 'b', 'tags': [], 'mentions': ['@x']}, {'id': 2, 'username': 'john', 'content': 'c', 'tags': [], 'mentions': ['@m', 'n']}]`},
	} {
		if got := runOn(t, "TwitterAPI", a, call[0]); got != call[1] {
			t.Errorf("%s\n  got  %s\n  want %s", call[0], got, call[1])
		}
	}
	b, _ := New("TwitterAPI", cfg)
	want := `{"id": 0, "username": "john", "content": "d", "tags": [], "mentions": []}`
	if got := runOn(t, "TwitterAPI", b, `post_tweet('d')`); got != want {
		t.Errorf("another instance's post_tweet('d'): got %s, want %s (its own default list)", got, want)
	}
}

// TestTwitterAPILoad: tweet ids go through int(); comments keep the
// config's str keys, which a call's int id does not find.
func TestTwitterAPILoad(t *testing.T) {
	load := func(src string) (Class, error) {
		cfg, err := pyval.Decode([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return New("TwitterAPI", cfg.(*pyval.Dict))
	}
	if _, err := load(`{"tweets": {"x": {}}}`); err == nil || !strings.Contains(err.Error(), "invalid literal for int() with base 10: 'x'") {
		t.Errorf("tweets key 'x': got %v", err)
	}
	a, err := load(`{"tweets": {"1_0": {"a": 0}, "010": {"a": 1}, " +7 ": {"a": 2}, "\u0663": {"a": 3}}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"a": 1}`, `{"a": 2}`, `{"a": 3}`}
	for i, id := range []string{"10", "7", "3"} {
		if got := runOn(t, "TwitterAPI", a, "get_tweet("+id+")"); got != want[i] {
			t.Errorf("get_tweet(%s): got %s, want %s", id, got, want[i])
		}
	}
	if n := a.State().Value("tweets").(*pyval.Dict).Len(); n != 3 {
		t.Errorf("%d tweets, want 3", n)
	}
	// tweet_counter += 1 after the tweet is stored, as Python does it
	// (mentions given: the default list is the process's, see twitterAPI).
	for _, c := range [][3]string{
		{`{"tweet_counter": "a", "authenticated": true}`, `Error during execution: can only concatenate str (not "int") to str`, `'a'`},
		{`{"tweet_counter": null, "authenticated": 1}`, `Error during execution: unsupported operand type(s) for +=: 'NoneType' and 'int'`, `None`},
		{`{"tweet_counter": 2.5, "authenticated": true}`, `{"id": 2.5, "username": "john", "content": "z", "tags": [], "mentions": []}`, `3.5`},
	} {
		tw, err := load(c[0])
		if err != nil {
			t.Fatal(err)
		}
		got := runOn(t, "TwitterAPI", tw, "post_tweet('z', mentions=[])")
		counter := pyval.Repr(tw.State().Value("tweet_counter"))
		if got != c[1] || counter != c[2] {
			t.Errorf("%s: post_tweet('z', mentions=[]) gave %s and tweet_counter %s, want %s and %s", c[0], got, counter, c[1], c[2])
		}
		if n := tw.State().Value("tweets").(*pyval.Dict).Len(); n != 1 {
			t.Errorf("%s: %d tweets, want 1", c[0], n)
		}
	}
}
