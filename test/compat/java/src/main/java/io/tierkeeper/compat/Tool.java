package io.tierkeeper.compat;

public final class Tool {
    public static void main(String[] args) {
        System.out.println("{}");
    }
}
