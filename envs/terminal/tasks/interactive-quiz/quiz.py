"""A three-question quiz for the terminal."""
import hashlib

QUESTIONS = [
    ("What is 6 times 7? ", "42"),
    ("Type the word 'terminal' backwards: ", "lanimret"),
    ("Which colour is a clear daytime sky (one word)? ", "blue"),
]


def main():
    answers = []
    for question, right in QUESTIONS:
        while True:
            got = input(question).strip().lower()
            if got == right:
                print("Right!")
                answers.append(got)
                break
            print("Wrong, try again.")
    token = hashlib.sha256("|".join(answers).encode()).hexdigest()
    with open("/app/quiz_passed.txt", "w") as f:
        f.write(token + "\n")
    print("All correct. Well done!")


if __name__ == "__main__":
    main()
