// Greet prints its arguments through Greeting, a class in another file: a program that
// internal/jvm compiles with its helper (Program.With).
public class Greet {
    public static void main(String[] args) {
        System.out.println(Greeting.of(String.join(" ", args)));
    }
}
