"""What the book's notebooks call: profiles and cached runs (`experiments`), analysis of run
files and router outputs (`analysis`), claims and their verdicts (`claims`), and plots (`plots`).
A notebook loads, plots and states verdicts; the logic is here, where it is tested."""
