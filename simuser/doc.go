// Package simuser simulates the users of a personal agent, to show on
// this machine that an agent learns from being used. It is a simulation
// and says so: its users are programs with fixed preferences, its
// questions a small corpus written for it.
//
// Each User wants something of every reply (Preferences: lowercase, no
// bullet lists, under 30 words, ending with a question; Adversarial: bullet
// lists, 30 words or more), and reacts to each reply as the students of
// OpenClaw-RL's experiments do: thanks when it met every preference, else
// a correction that states the first one missed ("No. Please write in
// lowercase letters only.") or, Requery of the time, the same question
// again, rephrased. An adversary reacts to its own, contradicting
// preferences, and Unsafe of the time asks the agent to ignore its
// instructions.
//
// Corpus writes the warm start's chat corpus: conversations about the
// Topics whose replies vary in exactly those properties, at Rates, so that
// a model trained on it meets each preference only some of the time. Some
// of its examples carry a hint after rl.HintHeader (the teacher context of
// on-policy distillation) that the reply follows, so the same model
// reading a hint is a teacher; the replies never follow feedback given
// earlier in a conversation, so what the agent learns shows in its weights.
//
// Simulate plays sessions against an OpenAI-compatible endpoint (the
// proxy of `nextstate train --proxy`) with the proxy's session headers,
// and reports each user's compliance per session: the share of its replies
// that met its preferences.
package simuser
