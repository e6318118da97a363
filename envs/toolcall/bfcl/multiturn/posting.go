package multiturn

import (
	"slices"
	"strings"
	"sync"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// twitterAPI is BFCL's TwitterAPI (posting_api.py): a user's tweets,
// comments, retweets and follows, behind a username and password.
//
// Python keys its dicts by values of any hashable type: tweets by int
// ids (the config's string keys go through int()), comments by whatever
// tweet_id a call passed (so the config's "1" and a call's 1 are two
// keys), retweets by username. Here each of them is a *pyval.Dict keyed
// by hashKey, which maps values Python finds equal as keys (1, 1.0, True)
// to one string and all others to distinct ones; the keys are never shown
// to the model, and State compares them as Python does.
//
// post_tweet's default mentions list is, in Python, one list object
// shared by every call that leaves mentions out, in the whole process, so
// a mention() of one such tweet extends the mentions of all of them,
// whichever instance posted them: one case's run leaks into the next
// ones. Here each instance has its own (twShared, made in register's
// constructor): shared by the tweets of one run, as if each run had a
// process of its own, and never across runs, which an RL gym needs
// independent. testdata/record.py records BFCL's classes the same way.
// The default tags list is never mutated, so it needs no such care.
//
// Deviations: Load refuses a config whose tweets, comments or retweets is
// no dict, whose comments or retweets hold other values than lists, or
// whose following_list is no list, where Python would load it and fail
// (or not) in a later call; BFCL's configs have none of these.
type twitterAPI struct {
	username      any
	password      any
	authenticated any
	tweets        *pyval.Dict // hashKey(id) -> tweet (a *pyval.Dict as posted)
	comments      *pyval.Dict // hashKey(tweet_id) -> list of comment dicts
	retweets      *pyval.Dict // hashKey(username) -> list of tweet ids
	following     []any
	counter       any // the next tweet's id (an int as loaded)

	// mentions is post_tweet's default mentions list, and sharers the
	// tweets this instance posted with it: each holds its contents,
	// brought up to date before every call and State.
	mentions *twShared
	sharers  []*pyval.Dict
}

func init() {
	register("TwitterAPI", func() Class { return &twitterAPI{mentions: &twShared{}} })
}

// twDefault is post_tweet's mentions default as bound: it stands for the
// list shared by the calls that leave mentions out (see twitterAPI). It
// reads as the empty list it starts as.
type twDefault struct{}

func (twDefault) String() string { return "[]" }

// twShared is a list shared by the tweets of an instance, as a Python
// default list object is. Extending it makes a new slice, so the slices handed out never
// change.
type twShared struct {
	mu   sync.Mutex
	list []any
}

// get is the list now.
func (s *twShared) get() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.list == nil {
		return []any{}
	}
	return s.list
}

// extend is list.extend(more).
func (s *twShared) extend(more []any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(slices.Clip(s.list), more...)
}

// set replaces the list (for tests), returning the old one.
func (s *twShared) set(l []any) []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.list
	s.list = l
	return old
}

// syncShared gives the tweets posted with the default mentions list its
// contents now, as Python's shared list object would show them.
func (t *twitterAPI) syncShared() {
	if len(t.sharers) == 0 {
		return
	}
	l := t.mentions.get()
	for _, tw := range t.sharers {
		tw.Set("mentions", l)
	}
}

// Load is _load_scenario, with DEFAULT_STATE's values for the keys the
// config leaves out. TwitterAPI's loader ignores long_context: there is
// no long-context data to leave out.
func (t *twitterAPI) Load(cfg *pyval.Dict) error {
	get := func(k string, def any) any {
		if v, ok := cfg.Get(k); ok {
			return v
		}
		return def
	}
	t.username = get("username", "john")
	t.password = get("password", "john123")
	t.authenticated = get("authenticated", false)
	t.counter = get("tweet_counter", int64(0))
	t.sharers = nil

	tweets, ok := get("tweets", pyval.NewDict()).(*pyval.Dict)
	if !ok {
		return noAttr(get("tweets", nil), "items")
	}
	t.tweets = pyval.NewDict()
	for i, k := range tweets.Keys {
		id, err := parseInt(k) // int(k)
		if err != nil {
			return err
		}
		key, _ := hashKey(intVal(id))
		t.tweets.Set(key, tweets.Vals[i])
	}
	var err error
	if t.comments, err = twListDict(get("comments", pyval.NewDict()), "comments"); err != nil {
		return err
	}
	if t.retweets, err = twListDict(get("retweets", pyval.NewDict()), "retweets"); err != nil {
		return err
	}
	following, ok := get("following_list", []any{"alice", "bob"}).([]any)
	if !ok {
		return Raise("following_list is a %s, not a list", TypeName(get("following_list", nil)))
	}
	t.following = following
	return nil
}

// twListDict checks that a loaded dict's values are lists: the methods
// append to them.
func twListDict(v any, name string) (*pyval.Dict, error) {
	d, ok := v.(*pyval.Dict)
	if !ok {
		return nil, Raise("%s is a %s, not a dict", name, TypeName(v))
	}
	for i, x := range d.Vals {
		if _, ok := x.([]any); !ok {
			return nil, Raise("%s[%s] is a %s, not a list", name, pyval.Quote(d.Keys[i]), TypeName(x))
		}
	}
	return d, nil
}

// State is vars(instance) without _api_description.
func (t *twitterAPI) State() *pyval.Dict {
	t.syncShared()
	return dictOf(
		"username", t.username,
		"password", t.password,
		"authenticated", t.authenticated,
		"tweets", t.tweets,
		"comments", t.comments,
		"retweets", t.retweets,
		"following_list", t.following,
		"tweet_counter", t.counter,
	)
}

func twNotAuthed(before string) *pyval.Dict {
	return errDict("User not authenticated. Please authenticate before " + before + ".")
}

func twNotFound(id any) *pyval.Dict {
	return errDict("Tweet with ID " + Str(id) + " not found.")
}

// tweet looks a tweet up by id: its key, the tweet, and whether it is
// there; an unhashable id is Python's TypeError.
func (t *twitterAPI) tweet(id any) (string, any, bool, error) {
	key, err := hashKey(id)
	if err != nil {
		return "", nil, false, err
	}
	tw, ok := t.tweets.Get(key)
	return key, tw, ok, nil
}

// byUser is the tweets whose "username" == username, in order.
func (t *twitterAPI) byUser(username any) ([]any, error) {
	out := []any{}
	for _, tw := range t.tweets.Vals {
		u, err := getItem(tw, "username")
		if err != nil {
			return nil, err
		}
		if pyval.Eq(u, username) {
			out = append(out, tw)
		}
	}
	return out, nil
}

func (t *twitterAPI) Methods() []Method {
	ms := []Method{
		{Name: "authenticate_twitter", Params: []Param{Req("username"), Req("password")}, Call: func(a []any) (any, error) {
			if pyval.Eq(a[0], t.username) && pyval.Eq(a[1], t.password) {
				t.authenticated = true
				return dictOf("authentication_status", true), nil
			}
			return dictOf("authentication_status", false), nil
		}},
		{Name: "posting_get_login_status", Call: func([]any) (any, error) {
			return dictOf("login_status", Truthy(t.authenticated)), nil
		}},
		{Name: "post_tweet", Params: []Param{Req("content"), Opt("tags", []any{}), Opt("mentions", twDefault{})}, Call: t.postTweet},
		{Name: "retweet", Params: []Param{Req("tweet_id")}, Call: t.retweet},
		{Name: "comment", Params: []Param{Req("tweet_id"), Req("comment_content")}, Call: t.comment},
		{Name: "mention", Params: []Param{Req("tweet_id"), Req("mentioned_usernames")}, Call: t.mention},
		{Name: "follow_user", Params: []Param{Req("username_to_follow")}, Call: func(a []any) (any, error) {
			if !Truthy(t.authenticated) {
				return twNotAuthed("following"), nil
			}
			if indexOf(t.following, a[0]) >= 0 {
				return dictOf("follow_status", false), nil
			}
			t.following = append(t.following, a[0])
			return dictOf("follow_status", true), nil
		}},
		{Name: "list_all_following", Call: func([]any) (any, error) {
			if !Truthy(t.authenticated) {
				return twNotAuthed("listing following"), nil
			}
			return dictOf("following_list", t.following), nil
		}},
		{Name: "unfollow_user", Params: []Param{Req("username_to_unfollow")}, Call: func(a []any) (any, error) {
			if !Truthy(t.authenticated) {
				return twNotAuthed("unfollowing"), nil
			}
			i := indexOf(t.following, a[0])
			if i < 0 {
				return dictOf("unfollow_status", false), nil
			}
			t.following = slices.Delete(t.following, i, i+1)
			return dictOf("unfollow_status", true), nil
		}},
		{Name: "get_tweet", Params: []Param{Req("tweet_id")}, Call: func(a []any) (any, error) {
			_, tw, ok, err := t.tweet(a[0])
			if err != nil {
				return nil, err
			}
			if !ok {
				return twNotFound(a[0]), nil
			}
			return tw, nil
		}},
		{Name: "get_user_tweets", Params: []Param{Req("username")}, Call: func(a []any) (any, error) {
			return t.byUser(a[0])
		}},
		{Name: "search_tweets", Params: []Param{Req("keyword")}, Call: t.searchTweets},
		{Name: "get_tweet_comments", Params: []Param{Req("tweet_id")}, Call: func(a []any) (any, error) {
			key, _, ok, err := t.tweet(a[0])
			if err != nil {
				return nil, err
			}
			if !ok {
				return twNotFound(a[0]), nil
			}
			if cs, ok := t.comments.Get(key); ok {
				return cs, nil
			}
			return []any{}, nil
		}},
		{Name: "get_user_stats", Params: []Param{Req("username")}, Call: func(a []any) (any, error) {
			mine, err := t.byUser(a[0])
			if err != nil {
				return nil, err
			}
			following := 0
			if pyval.Eq(a[0], t.username) {
				following = len(t.following)
			}
			key, err := hashKey(a[0])
			if err != nil {
				return nil, err
			}
			rts, _ := t.retweets.Value(key).([]any)
			return dictOf(
				"tweet_count", int64(len(mine)),
				"following_count", int64(following),
				"retweet_count", int64(len(rts)),
			), nil
		}},
	}
	for i := range ms {
		call := ms[i].Call
		ms[i].Call = func(a []any) (any, error) {
			t.syncShared()
			return call(a)
		}
	}
	return ms
}

func (t *twitterAPI) postTweet(a []any) (any, error) {
	if !Truthy(t.authenticated) {
		return twNotAuthed("posting"), nil
	}
	mentions, shared := a[2], false
	if _, ok := mentions.(twDefault); ok {
		mentions, shared = t.mentions.get(), true
	}
	tw := dictOf("id", t.counter, "username", t.username, "content", a[0], "tags", a[1], "mentions", mentions)
	key, err := hashKey(t.counter)
	if err != nil {
		return nil, err
	}
	t.tweets.Set(key, tw)
	if shared {
		t.sharers = append(t.sharers, tw)
	}
	next, err := arith("+=", t.counter, int64(1))
	if err != nil {
		return nil, err
	}
	t.counter = next
	return tw, nil
}

func (t *twitterAPI) retweet(a []any) (any, error) {
	if !Truthy(t.authenticated) {
		return twNotAuthed("retweeting"), nil
	}
	_, _, ok, err := t.tweet(a[0])
	if err != nil {
		return nil, err
	}
	if !ok {
		return twNotFound(a[0]), nil
	}
	user, err := hashKey(t.username)
	if err != nil {
		return nil, err
	}
	mine, _ := t.retweets.Value(user).([]any)
	if indexOf(mine, a[0]) >= 0 {
		return dictOf("retweet_status", "Already retweeted"), nil
	}
	if mine == nil {
		mine = []any{}
	}
	t.retweets.Set(user, append(mine, a[0]))
	return dictOf("retweet_status", "Successfully retweeted"), nil
}

func (t *twitterAPI) comment(a []any) (any, error) {
	if !Truthy(t.authenticated) {
		return twNotAuthed("commenting"), nil
	}
	key, _, ok, err := t.tweet(a[0])
	if err != nil {
		return nil, err
	}
	if !ok {
		return twNotFound(a[0]), nil
	}
	c := dictOf("username", t.username, "content", a[1])
	cs, _ := t.comments.Value(key).([]any)
	if cs == nil {
		cs = []any{}
	}
	t.comments.Set(key, append(cs, c))
	return dictOf("comment_status", "Comment added successfully"), nil
}

func (t *twitterAPI) mention(a []any) (any, error) {
	_, tw, ok, err := t.tweet(a[0])
	if err != nil {
		return nil, err
	}
	if !ok {
		return twNotFound(a[0]), nil
	}
	m, err := getItem(tw, "mentions")
	if err != nil {
		return nil, err
	}
	list, ok := m.([]any)
	if !ok {
		return nil, noAttr(m, "extend")
	}
	more, err := iterate(a[1])
	if err != nil {
		return nil, err
	}
	d := tw.(*pyval.Dict) // getItem found a key, so tw is a dict
	if slices.Contains(t.sharers, d) {
		t.mentions.extend(more)
		t.syncShared()
	} else {
		d.Set("mentions", append(slices.Clip(list), more...))
	}
	return dictOf("mention_status", "Users mentioned successfully"), nil
}

// searchTweets is search_tweets, evaluating as Python's comprehension
// does (so a keyword that is no str fails only when there is a tweet).
func (t *twitterAPI) searchTweets(a []any) (any, error) {
	out := []any{}
	for _, tw := range t.tweets.Vals {
		kw, err := lower(a[0])
		if err != nil {
			return nil, err
		}
		content, err := getItem(tw, "content")
		if err != nil {
			return nil, err
		}
		c, err := lower(content)
		if err != nil {
			return nil, err
		}
		if strings.Contains(c, kw) {
			out = append(out, tw)
			continue
		}
		tags, err := getItem(tw, "tags")
		if err != nil {
			return nil, err
		}
		items, err := iterate(tags)
		if err != nil {
			return nil, err
		}
		match := false
		for _, tag := range items {
			l, err := lower(tag)
			if err != nil {
				return nil, err
			}
			match = match || l == kw
		}
		if match {
			out = append(out, tw)
		}
	}
	return out, nil
}
