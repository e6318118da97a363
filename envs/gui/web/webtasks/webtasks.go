package webtasks

import (
	"embed"
	"io/fs"
	"slices"
	"strings"
)

// FS holds the suite laid out as MiniWoB++'s html/ folder: core/core.js
// and core/core.css, and one page per task at miniwob/<name>.html, which
// loads ../core/core.js. Serve it over HTTP from its root.
//
//go:embed core miniwob
var FS embed.FS

// Task describes one built-in web task.
type Task struct {
	// Name is the page's name: its page is miniwob/<Name>.html.
	Name string
	// Description says what the task exercises, for listings.
	Description string
	// Width and Height are the task frame's size in CSS pixels (#wrap), the
	// part of the page to show.
	Width, Height int
	// MaxSteps is enough steps for a careful agent, with room for a few
	// mistakes it can recover from.
	MaxSteps int
}

// Page is the task's page inside FS.
func (t Task) Page() string { return "miniwob/" + t.Name + ".html" }

// The frame of every built-in page, as in MiniWoB++.
const (
	frameWidth  = 160
	frameHeight = 210
)

var tasks = []Task{
	{Name: "click-button", Description: "click the button with the given label among several", MaxSteps: 5},
	{Name: "click-link", Description: "click the link with the given text in a paragraph where the same word also appears as plain text", MaxSteps: 5},
	{Name: "click-checkboxes", Description: "tick exactly the named checkboxes, unticking preset ones, then submit", MaxSteps: 15},
	{Name: "choose-radio", Description: "choose the named radio button (another is preselected), then submit", MaxSteps: 6},
	{Name: "click-tab", Description: "find a button on one of several tabs and click it", MaxSteps: 8},
	{Name: "double-click", Description: "double-click the named tile (a single click only selects it)", MaxSteps: 5},
	{Name: "right-click-menu", Description: "right-click a file and choose an action from its context menu", MaxSteps: 6},
	{Name: "enter-text", Description: "type the given word into a text box and submit", MaxSteps: 6},
	{Name: "copy-text", Description: "copy a code shown on the page (not in the instruction) into a text box and submit", MaxSteps: 6},
	{Name: "enter-date", Description: "enter a date given in words as MM/DD/YYYY and submit", MaxSteps: 6},
	{Name: "login-form", Description: "fill in a username and a password and submit the form", MaxSteps: 8},
	{Name: "choose-dropdown", Description: "select the named option of a <select> menu and submit", MaxSteps: 8},
	{Name: "search-select", Description: "type into a search box and click the right one of several similar results", MaxSteps: 6},
	{Name: "toggle-switch", Description: "turn named on/off switches to the asked state, leave the others, and save", MaxSteps: 8},
	{Name: "slider-set", Description: "set a range slider to a value (click, drag or arrow keys) and submit", MaxSteps: 40},
	{Name: "drag-box", Description: "drag a square onto the labelled drop zone (mouse down, move, up)", MaxSteps: 5},
	{Name: "scroll-find", Description: "scroll a list to an entry below the fold and click it", MaxSteps: 15},
	{Name: "multi-page-checkout", Description: "add a product to the cart, check out, fill in the delivery form and place the order, over three screens", MaxSteps: 20},
}

func init() {
	for i := range tasks {
		tasks[i].Width, tasks[i].Height = frameWidth, frameHeight
	}
}

// Tasks returns the built-in tasks, in a stable order.
func Tasks() []Task { return slices.Clone(tasks) }

// Lookup returns the built-in task of that name.
func Lookup(name string) (Task, bool) {
	for _, t := range tasks {
		if t.Name == name {
			return t, true
		}
	}
	return Task{}, false
}

// Pages returns the names of the pages in FS (miniwob/*.html without the
// folder and extension), sorted. Every task has one; a page without a task
// is not part of the suite.
func Pages() []string {
	ents, err := fs.ReadDir(FS, "miniwob")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".html"); ok && n != "" && !e.IsDir() {
			out = append(out, n)
		}
	}
	return out
}
