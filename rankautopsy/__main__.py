from rankautopsy.cli import main

main()
