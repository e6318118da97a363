"""Text helpers: slugs and titles."""


def slugify(text):
    """Return a URL slug of text: lower case words joined by hyphens."""
    words = text.strip().lower().split()
    return "-".join(words)


def title_case(text):
    """Capitalize every word of text, keeping small words lower case."""
    small = {"a", "an", "and", "of", "the", "to"}
    out = []
    for i, word in enumerate(text.split()):
        if i > 0 and word.lower() in small:
            out.append(word.lower())
        else:
            out.append(word[:1].upper() + word[1:].lower())
    return " ".join(out)
