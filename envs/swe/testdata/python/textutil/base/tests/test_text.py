from textutil import slugify, title_case


def test_slugify_simple():
    assert slugify("Hello World") == "hello-world"


def test_slugify_spaces():
    assert slugify("  many   spaces here ") == "many-spaces-here"


def test_title_case():
    assert title_case("the lord of the rings") == "The Lord of the Rings"
