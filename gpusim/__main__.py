from gpusim.cli import main

main()
