from console_cli.main import main

main()
